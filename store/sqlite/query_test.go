package sqlite

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

func TestDB_JobRoundTrip(t *testing.T) {
	t.Parallel()
	full := store.Job{
		ID: id(1), Type: "t", Queue: "q", Priority: math.MaxUint16, Status: store.Dead,
		Payload: []byte(" {\"a\": [1, 2.50, \"é\\u00e9\"]}\n"), // verbatim, not re-encoded
		ReadyAt: 1, Attempts: math.MaxUint32,
		RetryLimit: ptr(uint32(math.MaxUint32)),
		Backoff:    &store.Backoff{Exponent: 1.1, BaseMs: math.MaxUint32, JitterMs: 7},
		Retention:  &store.Retention{CompletedMs: ptr(uint64(0)), DeadMs: ptr(uint64(math.MaxUint64))},
		DequeuedAt: 2, FailedAt: 3, CompletedAt: 4, PurgeAt: 5,
		Budgets: []store.Binding{{Key: "b", Cost: 3}, {Key: "a\"x", Cost: math.MaxInt64}},
	}
	with := func(change func(*store.Job)) store.Job {
		j := job(1)
		change(&j)
		return j
	}

	for name, tc := range map[string]struct {
		in, want store.Job
	}{
		"Minimal":            {in: job(1), want: job(1)},
		"Full":               {in: full, want: full},
		"RetryLimitZero":     {in: with(func(j *store.Job) { j.RetryLimit = ptr(uint32(0)) }), want: with(func(j *store.Job) { j.RetryLimit = ptr(uint32(0)) })},
		"RetentionCompleted": {in: with(func(j *store.Job) { j.Retention = &store.Retention{CompletedMs: ptr(uint64(9))} }), want: with(func(j *store.Job) { j.Retention = &store.Retention{CompletedMs: ptr(uint64(9))} })},
		"RetentionDead":      {in: with(func(j *store.Job) { j.Retention = &store.Retention{DeadMs: ptr(uint64(0))} }), want: with(func(j *store.Job) { j.Retention = &store.Retention{DeadMs: ptr(uint64(0))} })},
		"RetentionEmpty":     {in: with(func(j *store.Job) { j.Retention = &store.Retention{} }), want: job(1)},
		"BackoffZero":        {in: with(func(j *store.Job) { j.Backoff = &store.Backoff{} }), want: with(func(j *store.Job) { j.Backoff = &store.Backoff{} })},
		"BudgetsEmpty":       {in: with(func(j *store.Job) { j.Budgets = []store.Binding{} }), want: job(1)},
		"PayloadNil":         {in: with(func(j *store.Job) { j.Payload = nil }), want: with(func(j *store.Job) { j.Payload = nil })},
		"PayloadEmptyIsNil":  {in: with(func(j *store.Job) { j.Payload = []byte{} }), want: with(func(j *store.Job) { j.Payload = nil })},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.apply(t, store.InsertJob(tc.in))
			got, err := b.db.GetJob(b.ctx, tc.in.ID, 0)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)

			// PutJob writes every field back but the payload, and can
			// clear options.
			b.apply(t, store.PutJob(job(1)))
			got, err = b.db.GetJob(b.ctx, tc.in.ID, 0)
			require.NoError(t, err)
			want := job(1)
			want.Payload = tc.want.Payload
			require.Equal(t, want, got)
			b.apply(t, store.PutJob(tc.in))
			got, err = b.db.GetJob(b.ctx, tc.in.ID, 0)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)

			listed, _, err := b.db.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 1)
			require.NoError(t, err)
			require.Equal(t, []store.Job{tc.want}, listed)
		})
	}
}

func TestDB_GetJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	purging := job(1)
	purging.Status, purging.PurgeAt = store.Completed, 1000
	b.apply(t, store.InsertJob(purging))

	_, err := b.db.GetJob(b.ctx, id(2), 0)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.db.GetJob(b.ctx, id(1), 999)
	require.NoError(t, err)
	_, err = b.db.GetJob(b.ctx, id(1), 1000)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.db.GetJob(b.ctx, id(1), 0)
	require.NoError(t, err)
}

func TestDB_SetStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	j := job(1)
	j.DequeuedAt = 10
	b.apply(t, store.InsertJob(j))

	b.apply(t, store.SetStatus(id(1), store.Ready, 0))
	got, err := b.db.GetJob(b.ctx, id(1), 0)
	require.NoError(t, err)
	require.EqualValues(t, 10, got.DequeuedAt)

	b.apply(t, store.SetStatus(id(1), store.InFlight, 20))
	got, err = b.db.GetJob(b.ctx, id(1), 0)
	require.NoError(t, err)
	require.Equal(t, store.InFlight, got.Status)
	require.EqualValues(t, 20, got.DequeuedAt)

	b.apply(t, store.SetStatus(id(2), store.InFlight, 20)) // missing job: no-op
	require.Equal(t, []string{id(1)}, b.ids(t))
}

func TestDB_Filters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Ten jobs: queue a/b/c, types x/y, all statuses, priorities 0..9,
	// attempts n%3, budgets on some, two awaiting purge.
	var ops []store.Op
	for n := range 10 {
		j := job(n)
		j.Queue = string("abc"[n%3])
		j.Type = string("xy"[n%2])
		j.Status = store.Status(n % 5)
		j.Priority = uint16(n)
		j.ReadyAt = int64(100 + n)
		j.Attempts = uint32(n % 3)
		j.Payload = []byte(`{"even":` + map[bool]string{true: "true", false: "false"}[n%2 == 0] + `}`)
		switch n {
		case 1:
			j.Budgets = []store.Binding{{Key: "k1", Cost: 1}}
		case 2:
			j.Budgets = []store.Binding{{Key: "k2", Cost: 1}, {Key: "k1", Cost: 2}}
		case 3:
			j.Budgets = []store.Binding{{Key: "k3", Cost: 1}}
		}
		if n == 3 || n == 4 { // completed and dead
			j.PurgeAt = int64(500 + n)
		}
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)

	u := func(v uint64) *uint64 { return &v }
	ids := func(ns ...int) []string {
		out := []string{}
		for _, n := range ns {
			out = append(out, id(n))
		}
		return out
	}
	many := make([]string, 100) // bound as one JSON array
	for i := range many {
		many[i] = id(1000 + i)
	}
	many[50] = id(7)
	manyKeys := slices.Repeat([]string{"k0"}, 70)
	manyKeys[33] = "k3"

	for name, tc := range map[string]struct {
		f    store.Filter
		want []string
	}{
		"None":             {store.Filter{}, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)},
		"IDs":              {store.Filter{IDs: []string{id(2), id(5), "nope"}}, ids(2, 5)},
		"ManyIDs":          {store.Filter{IDs: many}, ids(7)},
		"Queues":           {store.Filter{Queues: []string{"a", "c"}}, ids(0, 2, 3, 5, 6, 8, 9)},
		"Types":            {store.Filter{Types: []string{"y"}}, ids(1, 3, 5, 7, 9)},
		"Statuses":         {store.Filter{Statuses: []store.Status{store.Scheduled, store.Dead}}, ids(0, 4, 5, 9)},
		"BudgetKeys":       {store.Filter{BudgetKeys: []string{"k1"}}, ids(1, 2)},
		"BudgetKeysOr":     {store.Filter{BudgetKeys: []string{"k2", "k3", "k9"}}, ids(2, 3)},
		"ManyBudgetKeys":   {store.Filter{BudgetKeys: manyKeys}, ids(3)},
		"ManyStatuses":     {store.Filter{Statuses: slices.Repeat([]store.Status{store.Dead}, 70)}, ids(4, 9)},
		"PriorityRange":    {store.Filter{Priority: &store.Range{Lo: u(3), Hi: u(5)}}, ids(3, 4, 5)},
		"PriorityLo":       {store.Filter{Priority: &store.Range{Lo: u(8)}}, ids(8, 9)},
		"PriorityHi":       {store.Filter{Priority: &store.Range{Hi: u(1)}}, ids(0, 1)},
		"ReadyAtExact":     {store.Filter{ReadyAt: &store.Range{Lo: u(104), Hi: u(104)}}, ids(4)},
		"ReadyAtHuge":      {store.Filter{ReadyAt: &store.Range{Lo: u(math.MaxUint64)}}, ids()},
		"ReadyAtHugeHi":    {store.Filter{ReadyAt: &store.Range{Lo: u(108), Hi: u(math.MaxUint64)}}, ids(8, 9)},
		"Attempts":         {store.Filter{Attempts: &store.Range{Lo: u(2)}}, ids(2, 5, 8)},
		"PurgeVisible":     {store.Filter{Now: 503}, ids(0, 1, 2, 4, 5, 6, 7, 8, 9)},
		"PurgeBothGone":    {store.Filter{Now: 600}, ids(0, 1, 2, 5, 6, 7, 8, 9)},
		"Match":            {store.Filter{Match: func(p []byte) bool { return bytes.Contains(p, []byte("true")) }}, ids(0, 2, 4, 6, 8)},
		"AndAcrossFields":  {store.Filter{Queues: []string{"a"}, Types: []string{"x"}, Attempts: &store.Range{Hi: u(1)}}, ids(0, 6)},
		"AllFields":        {store.Filter{IDs: ids(2, 3, 4), Queues: []string{"c", "b"}, Types: []string{"x", "y"}, Statuses: []store.Status{store.Ready, store.Completed, store.InFlight}, BudgetKeys: []string{"k1", "k2"}, Priority: &store.Range{Lo: u(2)}, ReadyAt: &store.Range{Hi: u(102)}, Attempts: &store.Range{Lo: u(2), Hi: u(2)}, Now: 1, Match: func([]byte) bool { return true }}, ids(2)},
		"NothingMatches":   {store.Filter{Queues: []string{"zzz"}}, ids()},
		"MatchRejectsAll":  {store.Filter{Match: func([]byte) bool { return false }}, ids()},
		"StatusesAndPurge": {store.Filter{Statuses: []store.Status{store.Completed, store.Dead}, Now: 600}, ids(8, 9)},
		"Within":           {store.Filter{Within: store.NewIDSet([]string{id(7), id(2), id(2), id(99)})}, ids(2, 7)},
		"WithinEmpty":      {store.Filter{Within: store.NewIDSet(nil)}, ids()},
		"WithinAndFields":  {store.Filter{Within: store.NewIDSet(ids(1, 2, 5, 6, 7)), Queues: []string{"c", "a"}, Statuses: []store.Status{store.Ready, store.Completed}, Now: 600}, ids(6)},
		"WithinAndIDs":     {store.Filter{Within: store.NewIDSet(ids(1, 2, 5)), IDs: ids(2, 5, 8)}, ids(2, 5)},
		"WithinAndMatch":   {store.Filter{Within: store.NewIDSet(ids(1, 2, 3, 4)), Match: func(p []byte) bool { return bytes.Contains(p, []byte("true")) }}, ids(2, 4)},
		"WithinBudgetKeys": {store.Filter{Within: store.NewIDSet(ids(2, 3, 9)), BudgetKeys: []string{"k1", "k3"}, Types: []string{"x", "y"}}, ids(2, 3)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := b.db.JobIDs(b.ctx, tc.f)
			require.NoError(t, err)
			require.Equal(t, tc.want, append([]string{}, got...))

			n, err := b.db.CountJobs(b.ctx, tc.f)
			require.NoError(t, err)
			require.EqualValues(t, len(tc.want), n)

			jobs, more, err := b.db.ListJobs(b.ctx, tc.f, "", store.Asc, 100)
			require.NoError(t, err)
			require.False(t, more)
			listed := []string{}
			for _, j := range jobs {
				listed = append(listed, j.ID)
			}
			require.Equal(t, tc.want, listed)
		})
	}
}

func TestDB_ListJobsPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Enough rows that Match spans several chunks.
	const total = 3*matchChunk + 10
	var ops []store.Op
	for n := range total {
		j := job(n)
		if n%7 == 0 {
			j.Payload = []byte(`{"pick":true}`)
		}
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)
	pick := func(p []byte) bool { return bytes.Contains(p, []byte("pick")) }

	var picked []string
	for n := 0; n < total; n += 7 {
		picked = append(picked, id(n))
	}
	all := make([]string, total)
	for n := range all {
		all[n] = id(n)
	}
	// Every third job, as a Within set; with a Match, every 21st.
	var thirds, pickedThirds []string
	for n := 0; n < total; n += 3 {
		thirds = append(thirds, id(n))
		if n%7 == 0 {
			pickedThirds = append(pickedThirds, id(n))
		}
	}

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
				jobs, more, err := b.db.ListJobs(b.ctx, tc.f, from, tc.order, tc.limit)
				require.NoError(t, err)
				require.LessOrEqual(t, len(jobs), tc.limit)
				for _, j := range jobs {
					got = append(got, j.ID)
				}
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
		jobs, more, err := b.db.ListJobs(b.ctx, store.Filter{}, id(5), store.Asc, 2)
		require.NoError(t, err)
		require.True(t, more)
		require.Equal(t, []string{id(6), id(7)}, jobIDs(jobs))

		jobs, more, err = b.db.ListJobs(b.ctx, store.Filter{}, id(5), store.Desc, 10)
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, []string{id(4), id(3), id(2), id(1), id(0)}, jobIDs(jobs))
	})

	t.Run("WithinFromIsExclusive", func(t *testing.T) {
		t.Parallel()
		set := store.NewIDSet([]string{id(3), id(6), id(9), id(12)})
		for _, tc := range []struct {
			from  string
			order store.Order
			want  []string
		}{
			{id(6), store.Asc, []string{id(9), id(12)}},
			{id(7), store.Asc, []string{id(9), id(12)}},
			{id(6), store.Desc, []string{id(3)}},
			{id(7), store.Desc, []string{id(6), id(3)}},
			{id(12), store.Asc, []string{}},
			{id(3), store.Desc, []string{}},
		} {
			jobs, more, err := b.db.ListJobs(b.ctx, store.Filter{Within: set}, tc.from, tc.order, 10)
			require.NoError(t, err)
			require.False(t, more)
			require.Equal(t, tc.want, jobIDs(jobs), "from %s, order %d", tc.from, tc.order)
		}
	})

	t.Run("ExactlyLimitLeft", func(t *testing.T) {
		t.Parallel()
		jobs, more, err := b.db.ListJobs(b.ctx, store.Filter{}, id(total-4), store.Asc, 3)
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, jobs, 3)
	})
}

// TestDB_WithinSet checks that a Within set is looked up by primary key,
// a batch at a time: the plan never walks the table or an index, whatever
// else the filter asks, and sets larger than a batch count and list whole.
func TestDB_WithinSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ops []store.Op
	for n := range 50 {
		j := job(n)
		if n%2 == 1 {
			j.Status, j.Queue = store.Completed, "done"
		}
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)

	t.Run("PrimaryKeyLookups", func(t *testing.T) {
		t.Parallel()
		for name, f := range map[string]store.Filter{
			"Alone":      {},
			"Queues":     {Queues: []string{"default"}},
			"Statuses":   {Statuses: []store.Status{store.Completed}},
			"Everything": {Queues: []string{"done"}, Statuses: []store.Status{store.Ready, store.Completed}, BudgetKeys: []string{"k"}, Priority: &store.Range{}, Now: 1},
		} {
			for _, cols := range []string{jobColumns, "count(*)", "jobs.id"} {
				query, args := withinQuery(cols, &f, []string{id(1), id(2)})
				rows, err := b.db.rdb.QueryContext(b.ctx, "EXPLAIN QUERY PLAN "+query, args...)
				require.NoError(t, err)
				var plan []string
				for rows.Next() {
					var id, parent, unused int
					var detail string
					require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
					plan = append(plan, detail)
				}
				require.NoError(t, rows.Err())
				require.NoError(t, rows.Close())
				// The IDs are the outer loop; each finds its row by id
				// (the primary key, or an index that ends in id).
				require.True(t, strings.HasPrefix(plan[0], "SCAN json_each"), "%s, %.8s: %q", name, cols, plan)
				lookups := 0
				for _, step := range plan {
					if strings.Contains(step, " jobs ") {
						require.Regexp(t, `^SEARCH jobs USING .*\bid=\?\)$`, step, "%s, %.8s: %q", name, cols, plan)
						lookups++
					}
				}
				require.Equal(t, 1, lookups, "%s, %.8s: %q", name, cols, plan)
			}
		}
	})

	t.Run("LargerThanABatch", func(t *testing.T) {
		t.Parallel()
		// 2.5 batches of IDs, most of no job; the jobs are in every batch.
		var set, want []string
		for n := range 5 * withinChunk / 2 {
			set = append(set, id(n*7%(5*withinChunk/2)))
		}
		for n := 0; n < 50; n += 2 {
			want = append(want, id(n))
		}
		f := store.Filter{Within: store.NewIDSet(set), Statuses: []store.Status{store.Ready}}
		n, err := b.db.CountJobs(b.ctx, f)
		require.NoError(t, err)
		require.EqualValues(t, len(want), n)
		got, err := b.db.JobIDs(b.ctx, f)
		require.NoError(t, err)
		require.Equal(t, want, got)
		jobs, more, err := b.db.ListJobs(b.ctx, f, "", store.Desc, 2000)
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, reversed(want), jobIDs(jobs))
	})
}

func TestDB_Errors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)))
	rec := func(jobID string, attempt uint32) store.ErrorRecord {
		return store.ErrorRecord{JobID: jobID, Attempt: attempt, Message: "failed", ErrorType: "E",
			Backtrace: "at x\nat y", DequeuedAt: int64(attempt), FailedAt: int64(attempt) + 1}
	}
	var ops []store.Op
	for a := uint32(1); a <= 5; a++ {
		ops = append(ops, store.AddError(rec(id(1), a)))
	}
	ops = append(ops, store.AddError(rec(id(2), 1)), store.AddError(rec(id(3), 1))) // job 3 does not exist
	b.apply(t, ops...)

	got, err := b.db.GetError(b.ctx, id(1), 3)
	require.NoError(t, err)
	require.Equal(t, rec(id(1), 3), got)
	_, err = b.db.GetError(b.ctx, id(1), 6)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.db.GetError(b.ctx, id(3), 1)
	require.ErrorIs(t, err, store.ErrNotFound, "no record without its job")

	// A record of the same attempt replaces the old one.
	replaced := rec(id(1), 5)
	replaced.Message, replaced.ErrorType, replaced.Backtrace = "again", "", ""
	b.apply(t, store.AddError(replaced))
	got, err = b.db.GetError(b.ctx, id(1), 5)
	require.NoError(t, err)
	require.Equal(t, replaced, got)

	attempts := func(recs []store.ErrorRecord) []uint32 {
		var out []uint32
		for _, r := range recs {
			out = append(out, r.Attempt)
		}
		return out
	}
	for name, tc := range map[string]struct {
		from  uint32
		order store.Order
		limit int
		want  []uint32
		more  bool
	}{
		"FirstPage":    {0, store.Asc, 2, []uint32{1, 2}, true},
		"Middle":       {2, store.Asc, 2, []uint32{3, 4}, true},
		"LastFull":     {3, store.Asc, 2, []uint32{4, 5}, false},
		"DescFirst":    {0, store.Desc, 3, []uint32{5, 4, 3}, true},
		"DescFrom":     {3, store.Desc, 3, []uint32{2, 1}, false},
		"PastTheEnd":   {5, store.Asc, 3, nil, false},
		"AllAtOnce":    {0, store.Asc, 50, []uint32{1, 2, 3, 4, 5}, false},
		"DescPastHead": {1, store.Desc, 3, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			recs, more, err := b.db.ListErrors(b.ctx, id(1), tc.from, tc.order, tc.limit)
			require.NoError(t, err)
			require.Equal(t, tc.want, attempts(recs))
			require.Equal(t, tc.more, more)
		})
	}

	t.Run("DeleteJobDeletesRecords", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.apply(t, store.InsertJob(job(1)), store.AddError(rec(id(1), 1)))
		b.apply(t, store.DeleteJob(id(1)))
		recs, _, err := b.db.ListErrors(b.ctx, id(1), 0, store.Asc, 10)
		require.NoError(t, err)
		require.Empty(t, recs)
	})
}

func TestDB_Queues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	queues, err := b.db.Queues(b.ctx)
	require.NoError(t, err)
	require.Empty(t, queues)

	var ops []store.Op
	for n, q := range []string{"b", "a", "B", "é", "_", "a", "aa", "b"} {
		j := job(n)
		j.Queue = q
		j.Status = store.Status(n % 5)
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)
	queues, err = b.db.Queues(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"B", "_", "a", "aa", "b", "é"}, queues)
}

func TestDB_RecoverInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ops []store.Op
	for n := range 6 {
		j := job(n)
		j.Status = store.Status(n % 3) // two in flight
		j.DequeuedAt = 77
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)

	n, err := b.db.RecoverInFlight(b.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	count, err := b.db.CountJobs(b.ctx, store.Filter{Statuses: []store.Status{store.InFlight}})
	require.NoError(t, err)
	require.Zero(t, count)
	got, err := b.db.GetJob(b.ctx, id(2), 0)
	require.NoError(t, err)
	require.Equal(t, store.Ready, got.Status)
	require.EqualValues(t, 77, got.DequeuedAt, "recovery keeps the last dequeue time")

	n, err = b.db.RecoverInFlight(b.ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestDB_LiveJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	total := rebuildChunk + 37
	if testing.Short() {
		total = 40
	}
	var ops []store.Op
	var want []string
	for n := range total {
		j := job(n)
		j.Status = store.Status(n % 5)
		if j.Status.Live() {
			want = append(want, j.ID)
		}
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)

	var got []string
	require.NoError(t, b.db.LiveJobs(b.ctx, func(j store.Job) error {
		require.True(t, j.Status.Live())
		got = append(got, j.ID)
		return nil
	}))
	require.Equal(t, want, got)

	stop := errorString("stop")
	calls := 0
	err := b.db.LiveJobs(b.ctx, func(store.Job) error { calls++; return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, calls)
}

func TestDB_PurgeSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	type entry struct {
		ID string
		At int64
	}
	var ops []store.Op
	var want []entry
	for n := range 12 {
		j := job(n)
		j.Status = store.Status(n % 5)
		if n%5 >= 3 {
			j.PurgeAt = int64(1000 - n)
			want = append(want, entry{j.ID, j.PurgeAt})
		}
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)
	slices.SortFunc(want, func(a, b entry) int { return int(a.At - b.At) })

	var got []entry
	require.NoError(t, b.db.PurgeSchedule(b.ctx, func(id string, at int64) error {
		got = append(got, entry{id, at})
		return nil
	}))
	require.Equal(t, want, got)
}

func TestDB_Budgets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	k2 := store.Budget{Key: "k2", Allocation: 10, Strategy: store.TimeBased, DurationMs: 1000, Burst: 5, CreatedAt: 1, UpdatedAt: 2}
	k1 := store.Budget{Key: "k1", Allocation: 3, Strategy: store.WhileInFlight, CreatedAt: 3, UpdatedAt: 3}
	b.apply(t, store.PutBudget(k2), store.PutBudget(k1))

	got, err := b.db.Budgets(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []store.Budget{k1, k2}, got)

	k2.Allocation, k2.UpdatedAt = 20, 9
	b.apply(t, store.PutBudget(k2), store.DeleteBudget("k1"), store.DeleteBudget("absent"))
	got, err = b.db.Budgets(b.ctx)
	require.NoError(t, err)
	require.Equal(t, []store.Budget{k2}, got)
}

func TestDB_DeleteEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)), store.AddError(store.ErrorRecord{JobID: id(1), Attempt: 1}),
		store.PutBudget(store.Budget{Key: "k"}))
	b.apply(t, store.DeleteEverything(), store.InsertJob(job(3)))

	require.Equal(t, []string{id(3)}, b.ids(t))
	_, err := b.db.GetError(b.ctx, id(1), 1)
	require.ErrorIs(t, err, store.ErrNotFound)
	budgets, err := b.db.Budgets(b.ctx)
	require.NoError(t, err)
	require.Empty(t, budgets)
}

func jobIDs(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

type errorString string

func (e errorString) Error() string { return string(e) }
