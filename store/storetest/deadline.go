package storetest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testStartBy checks a job's deadline for waiting (issue 26 §3): the
// start_by column as InsertJob and PutJob write it and every read and Load
// return it, and ClearStartBy, alone and in groups where a backend may
// fold it into a row write or drop it before a delete.
func testStartBy(t *testing.T, newB func(testing.TB) *bundle) {
	const at = 1_796_143_186_879 // a real time: past 32 bits
	deadline := func(n int, ms int64) store.Job { return with(n, func(j *store.Job) { j.StartBy = ms }) }

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		for name, ms := range map[string]int64{"Real": at, "One": 1, "Max": math.MaxInt64} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := newB(t)
				in := deadline(1, ms)
				require.False(t, in.Plain(), "a job with start_by is not plain")
				b.apply(t, store.InsertJob(in), store.InsertJob(job(2)))
				require.Equal(t, in, b.get(t, id(1)))
				require.Zero(t, b.get(t, id(2)).StartBy, "none reads 0")
				listed, _, err := b.s.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 10)
				require.NoError(t, err)
				require.Equal(t, []store.Job{in, job(2)}, listed)
				got, err := b.s.GetJobs(b.ctx, []string{id(1)})
				require.NoError(t, err)
				require.Equal(t, []store.Job{in}, got)
			})
		}
	})

	t.Run("Load", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// Every live status carries its start_by; a finished job is not
		// loaded. Overrides and bindings beside it (SQLite packs a live
		// row into one text) read back whole.
		scheduled := with(1, func(j *store.Job) { j.Status, j.StartBy = store.Scheduled, at })
		inFlight := with(2, func(j *store.Job) {
			j.Status, j.StartBy, j.RetryLimit = store.InFlight, at+1, ptr(uint32(3))
			j.Budgets = []store.Binding{{Key: "k", Cost: 2}}
		})
		tagged := with(3, func(j *store.Job) { j.StartBy, j.FairTag = at+2, at-5 })
		plain := job(4)
		dead := with(5, func(j *store.Job) { j.Status, j.StartBy = store.Dead, at })
		b.apply(t, store.InsertJob(scheduled), store.InsertJob(inFlight), store.InsertJob(tagged),
			store.InsertJob(plain), store.InsertJob(dead))
		require.Equal(t, []store.LiveJob{live(scheduled), live(inFlight), live(tagged), live(plain)}, load(t, b).Jobs)
	})

	t.Run("PutJobWritesIt", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(deadline(2, at)))
		b.apply(t, store.PutJob(deadline(1, at+7)), store.PutJob(job(2)))
		require.Equal(t, deadline(1, at+7), b.get(t, id(1)))
		require.Equal(t, job(2), b.get(t, id(2)), "a put without one clears it")
	})

	t.Run("Clear", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(deadline(1, at)), store.InsertJob(job(2)), store.InsertJob(deadline(3, at)))
		b.apply(t, store.ClearStartBy(id(1)))
		require.Equal(t, job(1), b.get(t, id(1)))
		b.apply(t, store.ClearStartBy(id(2)), store.ClearStartBy(id(1))) // none to clear: no-op
		require.Equal(t, job(2), b.get(t, id(2)))
		require.Equal(t, job(1), b.get(t, id(1)))
		b.apply(t, store.ClearStartBy(id(9))) // missing job: no-op
		require.Equal(t, ids(1, 2, 3), b.ids(t))
		require.Equal(t, deadline(3, at), b.get(t, id(3)), "other jobs keep theirs")
		require.Equal(t, []store.LiveJob{live(job(1)), live(job(2)), live(deadline(3, at))}, load(t, b).Jobs)
	})

	t.Run("ClearInGroups", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		retried := with(2, func(j *store.Job) { j.Attempts, j.FailedAt, j.ReadyAt, j.Status = 1, 6, 99, store.Scheduled })
		// After the insert in one group (a backend may fold it into the
		// row), after a put, around a retry, and before a delete.
		b.apply(t, store.InsertJob(deadline(1, at)), store.ClearStartBy(id(1)))
		b.apply(t, store.InsertJob(deadline(2, at)), store.SetStatus(id(2), store.InFlight, 5),
			store.Retry(id(2), 1, 6, 99, store.Scheduled), store.ClearStartBy(id(2)))
		b.apply(t, store.InsertJob(job(3)), store.PutJob(deadline(3, at)), store.ClearStartBy(id(3)))
		b.apply(t, store.InsertJob(deadline(4, at)), store.ClearStartBy(id(4)), store.DeleteJob(id(4)))
		b.apply(t, store.InsertJob(job(5)), store.ClearStartBy(id(5)), store.PutJob(deadline(5, at+1)))
		require.Equal(t, job(1), b.get(t, id(1)))
		retried.DequeuedAt = 5
		require.Equal(t, retried, b.get(t, id(2)))
		require.Equal(t, job(3), b.get(t, id(3)))
		require.Equal(t, deadline(5, at+1), b.get(t, id(5)), "a later put writes it again")
		require.Equal(t, ids(1, 2, 3, 5), b.ids(t))

		// Appended without waiting: each group's outcome as if alone.
		ps := []store.Pending{
			b.s.Append(store.InsertJob(deadline(6, at))),
			b.s.Append(store.ClearStartBy(id(6))),
			b.s.Append(store.InsertJob(deadline(7, at)), store.ClearStartBy(id(6))),
			b.s.Append(store.Finish(id(7), store.Dead, 0, at, 0, at+10)),
		}
		for _, p := range ps {
			require.NoError(t, p.Wait(b.ctx))
		}
		require.Equal(t, job(6), b.get(t, id(6)))
		require.Equal(t, with(7, func(j *store.Job) {
			j.StartBy, j.Status, j.FailedAt, j.PurgeAt = at, store.Dead, at, at+10
		}), b.get(t, id(7)), "a death keeps the deadline it died of")
	})
}
