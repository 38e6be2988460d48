package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testReads checks the reads but the filters: lookups, paging, errors,
// queues, the batch lookup and the start-up load.
func testReads(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("GetJob", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(with(1, func(j *store.Job) { j.Status, j.PurgeAt = store.Completed, 1000 })))
		for _, tc := range []struct {
			id   string
			now  int64
			want error
		}{
			{id(2), 0, store.ErrNotFound},
			{id(1), 999, nil},
			{id(1), 1000, store.ErrNotFound}, // purge_at has come: as if purged
			{id(1), 0, nil},
		} {
			_, err := b.s.GetJob(b.ctx, tc.id, tc.now)
			if tc.want == nil {
				require.NoError(t, err, "%s at %d", tc.id, tc.now)
			} else {
				require.ErrorIs(t, err, tc.want, "%s at %d", tc.id, tc.now)
			}
		}
	})

	t.Run("ListJobsPaging", func(t *testing.T) { testPaging(t, newB) })

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)))
		rec := func(jobID string, attempt uint32) store.ErrorRecord {
			return store.ErrorRecord{JobID: jobID, Attempt: attempt, Message: "failed", ErrorType: "E",
				Backtrace: "at x\nat y", DequeuedAt: int64(attempt), FailedAt: int64(attempt) + 1}
		}
		var ops []store.Op
		for a := uint32(5); a >= 1; a-- {
			ops = append(ops, store.AddError(rec(id(1), a)))
		}
		b.apply(t, append(ops, store.AddError(rec(id(2), 1)))...)

		got, err := b.s.GetError(b.ctx, id(1), 3)
		require.NoError(t, err)
		require.Equal(t, rec(id(1), 3), got)
		_, err = b.s.GetError(b.ctx, id(1), 6)
		require.ErrorIs(t, err, store.ErrNotFound)

		attempts := func(recs []store.ErrorRecord) []uint32 {
			var out []uint32
			for _, r := range recs {
				out = append(out, r.Attempt)
			}
			return out
		}
		for _, tc := range []struct {
			from  uint32
			order store.Order
			limit int
			want  []uint32
			more  bool
		}{
			{0, store.Asc, 2, []uint32{1, 2}, true},
			{2, store.Asc, 2, []uint32{3, 4}, true},
			{3, store.Asc, 2, []uint32{4, 5}, false},
			{0, store.Desc, 3, []uint32{5, 4, 3}, true},
			{3, store.Desc, 3, []uint32{2, 1}, false},
			{5, store.Asc, 3, nil, false},
			{0, store.Asc, 50, []uint32{1, 2, 3, 4, 5}, false},
			{1, store.Desc, 3, nil, false},
		} {
			recs, more, err := b.s.ListErrors(b.ctx, id(1), tc.from, tc.order, tc.limit)
			require.NoError(t, err)
			require.Equal(t, tc.want, attempts(recs), "from %d order %d limit %d", tc.from, tc.order, tc.limit)
			require.Equal(t, tc.more, more, "from %d order %d limit %d", tc.from, tc.order, tc.limit)
		}
		recs, more, err := b.s.ListErrors(b.ctx, id(3), 0, store.Asc, 10)
		require.NoError(t, err)
		require.False(t, more)
		require.Empty(t, recs, "a missing job has no records")
	})

	t.Run("Queues", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		queues, err := b.s.Queues(b.ctx)
		require.NoError(t, err)
		require.Empty(t, queues)

		var ops []store.Op
		for n, q := range []string{"b", "a", "B", "é", "_", "a", "aa", "b"} {
			ops = append(ops, store.InsertJob(with(n, func(j *store.Job) { j.Queue, j.Status = q, store.Status(n%5) })))
		}
		b.apply(t, ops...)
		queues, err = b.s.Queues(b.ctx)
		require.NoError(t, err)
		// "aa" holds only a ready job: a store may leave it out.
		require.True(t, slices.IsSorted(queues), "by byte order: %q", queues)
		require.Equal(t, slices.Compact(slices.Clone(queues)), queues, "distinct: %q", queues)
		require.Subset(t, queues, []string{"B", "_", "a", "b", "é"}, "every queue of a job that is not ready")
		require.Subset(t, []string{"B", "_", "a", "aa", "b", "é"}, queues, "only queues of stored jobs")
	})

	t.Run("GetJobs", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		const total = 3000 // more than one batch of any sensible size
		var ops []store.Op
		for n := range total {
			ops = append(ops, store.InsertJob(with(n, func(j *store.Job) {
				j.Status = store.Status(n % 5)
				if n%4 == 0 {
					j.Budgets = []store.Binding{{Key: "k", Cost: int64(n)}}
				}
			})))
		}
		b.apply(t, ops...)

		for name, tc := range map[string]struct {
			ids  []string
			want []int
		}{
			"None":       {nil, nil},
			"One":        {ids(7), []int{7}},
			"Missing":    {[]string{id(total + 1), id(5), "nope", id(total + 2)}, []int{5}},
			"Duplicates": {ids(3, 3, 4), []int{3, 4}},
			"Batch":      {ids(upTo(256, 11)...), upTo(256, 11)},
			"Large":      {ids(upTo(total, 1)...), upTo(total, 1)},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got, err := b.s.GetJobs(b.ctx, tc.ids)
				require.NoError(t, err)
				slices.SortFunc(got, func(a, b store.Job) int { return strings.Compare(a.ID, b.ID) })
				want := []store.Job{}
				for _, n := range tc.want {
					want = append(want, b.get(t, id(n)))
				}
				if len(got) == 0 {
					got = []store.Job{}
				}
				require.Equal(t, want, got, "whole jobs, payloads included; missing skipped")
			})
		}
	})

	t.Run("Payloads", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		const total = 2500 // more than one batch of any sensible size
		var ops []store.Op
		for n := range total {
			ops = append(ops, store.InsertJob(with(n, func(j *store.Job) {
				if n%3 == 0 {
					j.Payload = nil
				} else {
					j.Payload = []byte(fmt.Sprintf(`{"n":%d}`, n))
				}
				if n%5 == 0 {
					j.FailedAt = int64(1_000_000 + n)
				}
			})))
		}
		b.apply(t, ops...)

		for name, tc := range map[string]struct {
			ids  []string
			want []int
		}{
			"None":       {nil, nil},
			"One":        {ids(10), []int{10}},
			"Empty":      {ids(9), []int{9}},
			"Missing":    {[]string{id(total + 1), id(5), "nope"}, []int{5}},
			"Duplicates": {ids(3, 3, 4), []int{3, 4}},
			"Large":      {ids(upTo(total, 1)...), upTo(total, 1)},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got, err := b.s.Payloads(b.ctx, tc.ids)
				require.NoError(t, err)
				slices.SortFunc(got, func(a, b store.JobPayload) int { return strings.Compare(a.ID, b.ID) })
				want := []store.JobPayload{}
				for _, n := range tc.want {
					var p []byte
					if n%3 != 0 {
						p = []byte(fmt.Sprintf(`{"n":%d}`, n))
					}
					var failed int64
					if n%5 == 0 {
						failed = int64(1_000_000 + n)
					}
					want = append(want, store.JobPayload{ID: id(n), Payload: p, FailedAt: failed})
				}
				if len(got) == 0 {
					got = []store.JobPayload{}
				}
				require.Equal(t, want, got, "payload (nil when empty) and failed_at; missing skipped")
			})
		}
	})

	t.Run("PayloadsFollowWrites", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		payload := func(n int) []byte { return []byte(fmt.Sprintf(`{"n":%d}`, n)) }
		for n := 1; n <= 7; n++ {
			b.apply(t, store.InsertJob(with(n, func(j *store.Job) { j.Payload = payload(n) })))
		}
		b.apply(t, store.Retry(id(1), 1, 10, 11, store.Ready))
		b.apply(t, store.Finish(id(2), store.Dead, 1, 20, 0, 0))
		b.apply(t, store.Retry(id(3), 1, 30, 31, store.Ready))
		b.apply(t, store.Finish(id(3), store.Completed, 1, 0, 32, 0)) // failed_at cleared
		put := b.get(t, id(4))
		put.FailedAt = 40
		b.apply(t, store.PutJob(put))
		b.apply(t, store.Retry(id(5), 1, 50, 51, store.Ready))
		b.apply(t, store.SetPayload(id(5), payload(55))) // a fold after a failure
		b.apply(t, store.Retry(id(6), 1, 60, 61, store.Ready))
		b.apply(t, store.SetPayload(id(6), nil))
		// In one group with the insert, which a store may fold together.
		b.apply(t, store.InsertJob(with(8, func(j *store.Job) { j.Payload = payload(8) })),
			store.Retry(id(8), 1, 80, 81, store.Ready))
		b.apply(t, store.InsertJob(with(9, func(j *store.Job) { j.Payload = nil })),
			store.Retry(id(9), 1, 90, 91, store.Ready), store.SetPayload(id(9), payload(9)))

		got, err := b.s.Payloads(b.ctx, ids(upTo(10, 1)[1:]...))
		require.NoError(t, err)
		slices.SortFunc(got, func(a, b store.JobPayload) int { return strings.Compare(a.ID, b.ID) })
		require.Equal(t, []store.JobPayload{
			{ID: id(1), Payload: payload(1), FailedAt: 10},
			{ID: id(2), Payload: payload(2), FailedAt: 20},
			{ID: id(3), Payload: payload(3)},
			{ID: id(4), Payload: payload(4), FailedAt: 40},
			{ID: id(5), Payload: payload(55), FailedAt: 50},
			{ID: id(6), FailedAt: 60},
			{ID: id(7), Payload: payload(7)},
			{ID: id(8), Payload: payload(8), FailedAt: 80},
			{ID: id(9), Payload: payload(9), FailedAt: 90},
		}, got, "each job's payload and failed_at as its last write left them")
		for n := 1; n <= 9; n++ {
			j := b.get(t, id(n))
			require.Equal(t, got[n-1].FailedAt, j.FailedAt, "job %d: as GetJob reads it", n)
		}
	})

	t.Run("Load", func(t *testing.T) { testLoad(t, newB) })
}

// upTo returns 0, step, 2·step... below n, as job numbers.
func upTo(n, step int) []int {
	var out []int
	for i := 0; i < n; i += step {
		out = append(out, i)
	}
	return out
}

func testPaging(t *testing.T, newB func(testing.TB) *bundle) {
	t.Parallel()
	b := newB(t)
	// Enough rows that a backend reading a Match filter in chunks spans
	// several.
	const total = 1000
	var ops []store.Op
	for n := range total {
		ops = append(ops, store.InsertJob(with(n, func(j *store.Job) {
			if n%7 == 0 {
				j.Payload = []byte(`{"pick":true}`)
			}
		})))
	}
	b.apply(t, ops...)
	pick := func(p []byte) bool { return bytes.Contains(p, []byte("pick")) }

	all := ids(upTo(total, 1)...)
	picked := ids(upTo(total, 7)...)
	thirds := ids(upTo(total, 3)...)
	pickedThirds := ids(upTo(total, 21)...)

	for name, tc := range map[string]struct {
		f     store.Filter
		order store.Order
		limit int
		want  []string
	}{
		"Asc":            {store.Filter{}, store.Asc, 10, all},
		"Desc":           {store.Filter{}, store.Desc, 7, reversed(all)},
		"MatchAsc":       {store.Filter{Match: pick}, store.Asc, 5, picked},
		"MatchDesc":      {store.Filter{Match: pick}, store.Desc, 3, reversed(picked)},
		"MatchOnePage":   {store.Filter{Match: pick}, store.Asc, 2000, picked},
		"FilterAndMatch": {store.Filter{Statuses: []store.Status{store.Ready}, Match: pick}, store.Asc, 40, picked},
		"WithinAsc":      {store.Filter{Within: store.NewIDSet(slices.Clone(thirds))}, store.Asc, 7, thirds},
		"WithinDesc":     {store.Filter{Within: store.NewIDSet(slices.Clone(thirds))}, store.Desc, 50, reversed(thirds)},
		"WithinOnePage":  {store.Filter{Within: store.NewIDSet(slices.Clone(thirds))}, store.Asc, 2000, thirds},
		"WithinAndMatch": {store.Filter{Within: store.NewIDSet(slices.Clone(thirds)), Match: pick}, store.Desc, 4, reversed(pickedThirds)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []string
			from := ""
			for {
				jobs, more, err := b.s.ListJobs(b.ctx, tc.f, from, tc.order, tc.limit)
				require.NoError(t, err)
				require.LessOrEqual(t, len(jobs), tc.limit)
				got = append(got, jobIDs(jobs)...)
				if !more {
					break
				}
				require.Len(t, jobs, tc.limit, "a page before the last is full")
				from = jobs[len(jobs)-1].ID
			}
			require.Equal(t, tc.want, got)
		})
	}

	t.Run("FromIsExclusive", func(t *testing.T) {
		t.Parallel()
		jobs, more, err := b.s.ListJobs(b.ctx, store.Filter{}, id(5), store.Asc, 2)
		require.NoError(t, err)
		require.True(t, more)
		require.Equal(t, ids(6, 7), jobIDs(jobs))

		jobs, more, err = b.s.ListJobs(b.ctx, store.Filter{}, id(5), store.Desc, 10)
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, ids(4, 3, 2, 1, 0), jobIDs(jobs))
	})

	t.Run("WithinFromIsExclusive", func(t *testing.T) {
		t.Parallel()
		set := store.NewIDSet(ids(3, 6, 9, 12))
		for _, tc := range []struct {
			from  string
			order store.Order
			want  []string
		}{
			{id(6), store.Asc, ids(9, 12)},
			{id(7), store.Asc, ids(9, 12)},
			{id(6), store.Desc, ids(3)},
			{id(7), store.Desc, ids(6, 3)},
			{id(12), store.Asc, ids()},
			{id(3), store.Desc, ids()},
		} {
			jobs, more, err := b.s.ListJobs(b.ctx, store.Filter{Within: set}, tc.from, tc.order, 10)
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, tc.want, jobIDs(jobs), "from %s, order %d", tc.from, tc.order)
		}
	})

	t.Run("ExactlyLimitLeft", func(t *testing.T) {
		t.Parallel()
		jobs, more, err := b.s.ListJobs(b.ctx, store.Filter{}, id(total-4), store.Asc, 3)
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, jobs, 3)
	})

	t.Run("LimitMustBePositive", func(t *testing.T) {
		t.Parallel()
		_, _, err := b.s.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 0)
		require.Error(t, err)
		_, _, err = b.s.ListErrors(b.ctx, id(1), 0, store.Asc, 0)
		require.Error(t, err)
	})
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

var errStop = errors.New("stop")
