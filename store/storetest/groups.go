package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testGroups checks groups appended without waiting, as the engine appends
// them: in order, each whole or not at all, and the same outcome however a
// backend batches or coalesces them.
func testGroups(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("InOrderAcrossGroups", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.s.Append(store.InsertJob(job(1)))
		b.s.Append(store.DeleteJob(id(1)))
		b.s.Append(store.InsertJob(job(2)))
		changed := with(2, func(j *store.Job) { j.Queue, j.Attempts = "other", 3 })
		b.s.Append(store.PutJob(changed))
		b.s.Append(store.SetStatus(id(2), store.InFlight, 42))
		require.NoError(t, b.s.Barrier(b.ctx))

		require.Equal(t, ids(2), b.ids(t))
		changed.Status, changed.DequeuedAt = store.InFlight, 42
		require.Equal(t, changed, b.get(t, id(2)))
	})

	t.Run("InsertThenDeleteInOneGroup", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.SetStatus(id(1), store.InFlight, 5),
			store.Retry(id(1), 1, 6, 7, store.Ready), store.SetBudgets(id(1), []store.Binding{{Key: "k", Cost: 1}}),
			store.AddError(store.ErrorRecord{JobID: id(1), Attempt: 1, Message: "boom"}), store.DeleteJob(id(1)))
		require.Empty(t, b.ids(t))
		require.Empty(t, b.errors(t, id(1)))
	})

	t.Run("InsertThenDeleteOfAnExistingJobFails", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)))
		err := b.s.Append(store.InsertJob(with(1, func(j *store.Job) { j.Queue = "x" })), store.DeleteJob(id(1))).Wait(b.ctx)
		require.Error(t, err, "the insert fails the group, delete or not")
		require.Equal(t, job(1), b.get(t, id(1)))
	})

	t.Run("FairTagNeverChanges", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		tagged := func(n int) store.Job {
			return with(n, func(j *store.Job) { j.FairTag, j.Budgets = int64(500+n), []store.Binding{{Key: "f/a", Cost: 1}} })
		}
		updates := func(n int) []store.Op {
			return []store.Op{store.SetStatus(id(n), store.InFlight, 5), store.Retry(id(n), 1, 6, 7, store.Ready),
				store.PatchJob(store.JobPatch{ID: id(n), Queue: "q", Priority: 1, Status: store.Ready, ReadyAt: 8}),
				store.SetBudgets(id(n), []store.Binding{{Key: "f/b", Cost: 2}}),
				store.PutJob(with(n, func(j *store.Job) { j.FairTag = 0 }))}
		}
		// Folded into the insert (one group, and groups appended together),
		// and applied to a committed row.
		b.apply(t, append([]store.Op{store.InsertJob(tagged(1))}, updates(1)...)...)
		b.s.Append(store.InsertJob(tagged(2)))
		for _, o := range updates(2) {
			b.s.Append(o)
		}
		require.NoError(t, b.s.Barrier(b.ctx))
		b.apply(t, store.InsertJob(tagged(3)))
		b.apply(t, updates(3)...)
		for n := 1; n <= 3; n++ {
			require.Equal(t, int64(500+n), b.get(t, id(n)).FairTag, "job %d", n)
		}
	})

	t.Run("UpdatesAfterAnInsert", func(t *testing.T) {
		t.Parallel()
		bs := []store.Binding{{Key: "k", Cost: 2}}
		for name, tc := range map[string]struct {
			op   store.Op
			want store.Job
		}{
			"SetStatus": {store.SetStatus(id(1), store.InFlight, 5), with(1, func(j *store.Job) { j.Status, j.DequeuedAt = store.InFlight, 5 })},
			"Retry":     {store.Retry(id(1), 1, 6, 99, store.Scheduled), with(1, func(j *store.Job) { j.Attempts, j.FailedAt, j.ReadyAt, j.Status = 1, 6, 99, store.Scheduled })},
			"Finish": {store.Finish(id(1), store.Dead, 2, 6, 7, 8), with(1, func(j *store.Job) {
				j.Status, j.Attempts, j.FailedAt, j.CompletedAt, j.PurgeAt = store.Dead, 2, 6, 7, 8
			})},
			"PatchJob": {store.PatchJob(store.JobPatch{ID: id(1), Queue: "q", Priority: 1, Status: store.Scheduled, ReadyAt: 8, RetryLimit: ptr(uint32(1))}),
				with(1, func(j *store.Job) {
					j.Queue, j.Priority, j.Status, j.ReadyAt, j.RetryLimit = "q", 1, store.Scheduled, 8, ptr(uint32(1))
				})},
			"SetBudgets": {store.SetBudgets(id(1), bs), with(1, func(j *store.Job) { j.Budgets = bs })},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := newB(t)
				for _, p := range []store.Pending{b.s.Append(store.InsertJob(job(1))), b.s.Append(tc.op)} {
					require.NoError(t, p.Wait(b.ctx))
				}
				require.Equal(t, tc.want, b.get(t, id(1)))
				b.apply(t, store.InsertJob(job(2)), tc.op) // in one group
				require.Equal(t, tc.want, b.get(t, id(1)))
			})
		}

		t.Run("OneAfterAnother", func(t *testing.T) {
			t.Parallel()
			b := newB(t)
			ps := []store.Pending{
				b.s.Append(store.InsertJob(job(1))),
				b.s.Append(store.SetStatus(id(1), store.InFlight, 5)),
				b.s.Append(store.Retry(id(1), 1, 6, 99, store.Scheduled)),
				b.s.Append(store.PatchJob(store.JobPatch{ID: id(1), Queue: "q", Priority: 1, Status: store.Ready, ReadyAt: 8})),
				b.s.Append(store.SetBudgets(id(1), bs)),
				b.s.Append(store.SetStatus(id(1), store.InFlight, 9)),
				b.s.Append(store.Finish(id(1), store.Completed, 1, 6, 10, 20)),
			}
			for _, p := range ps {
				require.NoError(t, p.Wait(b.ctx))
			}
			want := with(1, func(j *store.Job) {
				j.Queue, j.Priority, j.ReadyAt, j.Attempts, j.FailedAt = "q", 1, 8, 1, 6
				j.Status, j.DequeuedAt, j.CompletedAt, j.PurgeAt, j.Budgets = store.Completed, 9, 10, 20, bs
			})
			require.Equal(t, want, b.get(t, id(1)))
		})
	})

	t.Run("GroupFailsAlone", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(9)))
		good1 := b.s.Append(store.InsertJob(job(1)))
		// Fails on its last op, the duplicate of job 9: nothing of it stays,
		// not even what it did to job 1 before.
		bad := b.s.Append(store.InsertJob(job(2)), store.SetStatus(id(1), store.InFlight, 5),
			store.PutBudget(store.Budget{Key: "k", Allocation: 1, Strategy: store.WhileInFlight}),
			store.AddError(store.ErrorRecord{JobID: id(1), Attempt: 1}), store.InsertJob(job(9)))
		good2 := b.s.Append(store.InsertJob(job(3)), store.SetStatus(id(1), store.Scheduled, 0))

		require.NoError(t, good1.Wait(b.ctx))
		require.Error(t, bad.Wait(b.ctx))
		require.NoError(t, good2.Wait(b.ctx))
		require.Equal(t, ids(1, 3, 9), b.ids(t))
		require.Equal(t, with(1, func(j *store.Job) { j.Status = store.Scheduled }), b.get(t, id(1)))
		require.Empty(t, b.budgets(t))
		require.Empty(t, b.errors(t, id(1)))
	})

	t.Run("ConcurrentAppends", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		const goroutines, each = 20, 25
		var wg sync.WaitGroup
		errs := make(chan error, goroutines*each)
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					errs <- b.s.Append(store.InsertJob(job(g*each + i))).Wait(b.ctx)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		n, err := b.s.CountJobs(b.ctx, store.Filter{})
		require.NoError(t, err)
		require.EqualValues(t, goroutines*each, n)
	})

	// Random sequences of ops over a few jobs, appended without waiting to
	// one store and one group at a time to another, end the same: each
	// group has the same outcome and the stores hold the same data.
	t.Run("SameAsOneAtATime", func(t *testing.T) {
		t.Parallel()
		for seed := range uint64(16) {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				groups := randomGroups(rand.New(rand.NewPCG(seed, 7)), 60, seed%2 == 1)
				batched, single := newB(t), newB(t)
				ps := make([]store.Pending, len(groups))
				for i, g := range groups {
					ps[i] = batched.s.Append(g...)
				}
				for i, g := range groups {
					want := single.s.Append(g...).Wait(single.ctx)
					got := ps[i].Wait(batched.ctx)
					require.Equal(t, want == nil, got == nil, "group %d %v: one at a time %v, batched %v", i, g, want, got)
				}
				require.Equal(t, dump(t, single), dump(t, batched))
			})
		}
	})

	t.Run("Barrier", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		require.NoError(t, b.s.Barrier(b.ctx), "nothing appended")
		for i := range 200 {
			b.s.Append(store.InsertJob(job(i)))
		}
		require.NoError(t, b.s.Barrier(b.ctx))
		n, err := b.s.CountJobs(b.ctx, store.Filter{})
		require.NoError(t, err)
		require.EqualValues(t, 200, n, "a barrier sees every group appended before it")

		// A group that fails does not fail the barrier.
		b.s.Append(store.InsertJob(job(1)))
		require.NoError(t, b.s.Barrier(b.ctx))

		done, cancel := context.WithCancel(b.ctx)
		cancel()
		require.NoError(t, b.s.Barrier(done), "with nothing pending it does not wait")
	})
}

// randomGroups returns n groups of 1 to 4 ops on a few recent job IDs and
// two budget keys (spends included), start_by and its clears among them.
// Inserts are of new IDs, but with dup one in eight repeats one (and so
// fails its group, and any batch holding it: then the backend's retry of
// each group alone is tested, else its batches).
func randomGroups(r *rand.Rand, n int, dup bool) [][]store.Op {
	next := 0 // job IDs below next have been inserted
	recent := func() int { return max(0, next-1-r.IntN(4)) }
	status := func() store.Status { return store.Status(r.IntN(5)) }
	at := func() int64 { return r.Int64N(3) * 1000 }
	opFor := func(i int) store.Op {
		k := recent()
		switch r.IntN(14) {
		case 0, 1, 2:
			if !dup || r.IntN(8) != 0 || next == 0 {
				k = next
				next++
			}
			return store.InsertJob(with(k, func(j *store.Job) {
				j.Status, j.Attempts = status(), uint32(i)
				if r.IntN(2) == 0 {
					j.Budgets = []store.Binding{{Key: "a", Cost: int64(i)}}
				}
				if r.IntN(3) == 0 {
					j.StartBy = 1 + at()
				}
			}))
		case 3:
			return store.PutJob(with(k, func(j *store.Job) { j.Queue, j.Status, j.DequeuedAt = "put", status(), at() }))
		case 4, 5:
			return store.SetStatus(id(k), status(), at())
		case 6:
			return store.Retry(id(k), uint32(i), at(), at(), []store.Status{store.Scheduled, store.Ready}[r.IntN(2)])
		case 7:
			return store.Finish(id(k), []store.Status{store.Completed, store.Dead}[r.IntN(2)], uint32(i), at(), at(), at())
		case 8:
			return store.PatchJob(store.JobPatch{ID: id(k), Queue: fmt.Sprint("p", i), Priority: uint16(i), Status: status(),
				ReadyAt: at(), RetryLimit: ptr(uint32(i))})
		case 9:
			return store.SetBudgets(id(k), []store.Binding{{Key: "b", Cost: int64(i)}})
		case 10:
			return store.DeleteJob(id(k))
		case 11, 12:
			return store.AddError(store.ErrorRecord{JobID: id(k), Attempt: uint32(r.IntN(3)), Message: fmt.Sprint(i)})
		}
		if r.IntN(4) == 0 {
			return store.ClearStartBy(id(k))
		}
		if r.IntN(10) == 0 {
			return store.DeleteEverything()
		}
		key := []string{"a", "b"}[r.IntN(2)]
		switch r.IntN(4) {
		case 0:
			return store.DeleteBudget(key)
		case 1:
			return store.SpendBudget(key, store.Spent{EndsAt: at(), Used: int64(i)})
		}
		return store.PutBudget(store.Budget{Key: key, Allocation: int64(i + 1), Strategy: store.WhileInFlight})
	}
	groups := make([][]store.Op, n)
	op := 0
	for i := range groups {
		for range 1 + r.IntN(4) {
			groups[i] = append(groups[i], opFor(op))
			op++
		}
	}
	return groups
}

// state is everything a store holds, for comparisons.
type state struct {
	Jobs    []store.Job
	Errors  map[string][]store.ErrorRecord
	Budgets []store.Budget
}

func dump(t testing.TB, b *bundle) state {
	t.Helper()
	jobs, more, err := b.s.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 10_000)
	require.NoError(t, err)
	require.False(t, more)
	s := state{Jobs: jobs, Errors: map[string][]store.ErrorRecord{}, Budgets: b.budgets(t)}
	for _, j := range jobs {
		if recs := b.errors(t, j.ID); len(recs) > 0 {
			s.Errors[j.ID] = recs
		}
	}
	return s
}
