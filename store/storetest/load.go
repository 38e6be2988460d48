package storetest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// loaded is what a Load delivered, in order.
type loaded struct {
	Budgets []store.Budget
	Jobs    []store.LiveJob
	Unique  []store.UniqueJob // by ID
	Batches []store.LiveBatch
	Purges  []purge
	Starts  []store.LoadStart // one call
	Order   []string          // the parts in the order they came, runs collapsed
}

type purge struct {
	ID string
	At int64
}

// load runs Load and records everything it delivers.
func load(t testing.TB, b *bundle) loaded {
	t.Helper()
	var l loaded
	part := func(name string) {
		if len(l.Order) == 0 || l.Order[len(l.Order)-1] != name {
			l.Order = append(l.Order, name)
		}
	}
	err := b.s.Load(b.ctx, store.Loader{
		Budget: func(bg store.Budget) error { part("budgets"); l.Budgets = append(l.Budgets, bg); return nil },
		Job:    func(j store.LiveJob) error { part("jobs"); l.Jobs = append(l.Jobs, j); return nil },
		Unique: func(u store.UniqueJob) error { part("unique"); l.Unique = append(l.Unique, u); return nil },
		Batch:  func(bt store.LiveBatch) error { part("batches"); l.Batches = append(l.Batches, bt); return nil },
		Purge: func(id string, at int64) error {
			part("purges")
			l.Purges = append(l.Purges, purge{id, at})
			return nil
		},
		Start: func(st store.LoadStart) error { part("start"); l.Starts = append(l.Starts, st); return nil },
	})
	require.NoError(t, err)
	slices.SortFunc(l.Unique, func(a, b store.UniqueJob) int { return cmp.Compare(a.ID, b.ID) })
	return l
}

// maxID is the greatest job ID a Load tells.
func maxID(t testing.TB, b *bundle) string {
	t.Helper()
	starts := load(t, b).Starts
	require.Len(t, starts, 1)
	return starts[0].MaxID
}

// live is the LiveJob of a stored job.
func live(j store.Job) store.LiveJob {
	return store.LiveJob{ID: j.ID, Queue: j.Queue, Type: j.Type, Priority: j.Priority, Status: j.Status,
		ReadyAt: j.ReadyAt, Attempts: j.Attempts, RetryLimit: j.RetryLimit, Backoff: j.Backoff,
		Retention: j.Retention, Budgets: j.Budgets, FairTag: j.FairTag, StartBy: j.StartBy}
}

func testLoad(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		require.Equal(t, loaded{Starts: []store.LoadStart{{Plain: true}}, Order: []string{"start"}}, load(t, b))
	})

	t.Run("Everything", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		budgets := []store.Budget{
			{Key: "b", Allocation: 2, Strategy: store.TimeBased, DurationMs: 10, Burst: 3, CreatedAt: 1, UpdatedAt: 2},
			{Key: "a", Allocation: 1, Strategy: store.WhileInFlight, CreatedAt: 3, UpdatedAt: 4},
			{Key: "c", Allocation: 9, Strategy: store.WhileInFlight, CreatedAt: 5, UpdatedAt: 6, Paused: true, PausedUntil: 7,
				PerKey: &store.BudgetTemplate{Allocation: 1, Strategy: store.TimeBased, DurationMs: 100, Burst: 2}},
		}
		// 60 jobs over four priorities, the API's default among them (a
		// store may index it apart), inserted out of order; every status;
		// options and bindings on some; purge_at on terminal ones.
		var ops []store.Op
		var jobs []store.Job
		for n := range 60 {
			j := with(59-n, func(j *store.Job) {
				j.Priority = []uint16{7, 0, 65535, 32768}[n%4]
				j.Status = store.Status(n % 5)
				j.Attempts, j.DequeuedAt, j.FailedAt = uint32(n%4), int64(n), int64(n+1)
				j.Queue, j.Type = []string{"q1", "q2"}[n%2], []string{"t1", "t2", "t3"}[n%3]
				if n%6 == 0 {
					j.RetryLimit, j.Backoff = ptr(uint32(n)), &store.Backoff{Exponent: 1.5, BaseMs: 2, JitterMs: 3}
					j.Retention = &store.Retention{DeadMs: ptr(uint64(n))}
					j.Budgets = []store.Binding{{Key: "b", Cost: 2}, {Key: "a", Cost: 1}}
				}
				if n%4 == 1 {
					j.FairTag, j.Budgets = int64(1000+n), []store.Binding{{Key: "c/x", Cost: 1}}
				}
				if !j.Status.Live() {
					j.PurgeAt = int64(1000 - n/2) // some purge at the same time
				}
				if n%4 == 1 {
					j.Batch = &store.BatchConfig{Key: fmt.Sprint("k", n%3), When: "true", Fold: "$new"}
					j.BatchOpen = n%8 == 1
				}
			})
			jobs = append(jobs, j)
			ops = append(ops, store.InsertJob(j))
		}
		ops = append(ops, store.PutBudget(budgets[0]), store.PutBudget(budgets[1]), store.PutBudget(budgets[2]))
		b.apply(t, ops...)

		var want loaded
		want.Budgets = []store.Budget{budgets[1], budgets[0], budgets[2]}
		for _, j := range jobs {
			if j.Status.Live() {
				want.Jobs = append(want.Jobs, live(j))
				if j.Batch != nil {
					want.Batches = append(want.Batches, store.LiveBatch{ID: j.ID, Batch: *j.Batch, Open: j.BatchOpen})
				}
			} else {
				want.Purges = append(want.Purges, purge{j.ID, j.PurgeAt})
			}
		}
		slices.SortFunc(want.Jobs, func(a, b store.LiveJob) int {
			return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.ID, b.ID))
		})
		slices.SortFunc(want.Batches, func(a, b store.LiveBatch) int { return cmp.Compare(a.ID, b.ID) })
		slices.SortFunc(want.Purges, func(a, b purge) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID)) })
		want.Starts = []store.LoadStart{{MaxID: id(59)}} // live batched jobs: not plain
		want.Order = []string{"budgets", "start", "jobs", "batches", "purges"}
		require.Equal(t, want, load(t, b))
	})

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		jobs := []store.Job{
			with(1, func(j *store.Job) {
				j.Queue, j.Type, j.Priority, j.Attempts, j.ReadyAt = "q,é\x00;[", "", math.MaxUint16, math.MaxUint32, math.MaxInt64
				j.RetryLimit = ptr(uint32(math.MaxUint32))
				j.Backoff = &store.Backoff{Exponent: 1.1, BaseMs: math.MaxUint32, JitterMs: 0}
				j.Retention = &store.Retention{CompletedMs: ptr(uint64(math.MaxUint64)), DeadMs: ptr(uint64(0))}
				j.Budgets = []store.Binding{{Key: "a\"<&>,;b", Cost: math.MaxInt64}, {Key: "é", Cost: 1}}
			}),
			with(2, func(j *store.Job) { j.Queue, j.Type, j.Priority, j.ReadyAt = "", "t", 0, -5 }),
			with(3, func(j *store.Job) { j.Status, j.Retention = store.InFlight, &store.Retention{DeadMs: ptr(uint64(7))} }),
			with(4, func(j *store.Job) { j.Status, j.Backoff = store.Scheduled, &store.Backoff{Exponent: 3.4028235e38} }),
			with(5, func(j *store.Job) { j.RetryLimit, j.Budgets = ptr(uint32(0)), []store.Binding{{Key: "[", Cost: 2}} }),
			with(6, func(j *store.Job) { j.Budgets = []store.Binding{{Key: "k", Cost: -1}} }),
			// Fair tags, with and without the other optional parts.
			with(7, func(j *store.Job) { j.FairTag, j.Budgets = 1_700_000_000_123, []store.Binding{{Key: "f/a", Cost: 1}} }),
			with(8, func(j *store.Job) { j.FairTag = math.MaxInt64 }),
			with(9, func(j *store.Job) { j.FairTag, j.RetryLimit, j.Queue = -3, ptr(uint32(1)), "1,2," }),
		}
		var ops []store.Op
		for _, j := range jobs {
			ops = append(ops, store.InsertJob(j))
		}
		b.apply(t, ops...)
		want := []store.LiveJob{live(jobs[1]), live(jobs[2]), live(jobs[3]), live(jobs[4]), live(jobs[5]),
			live(jobs[6]), live(jobs[7]), live(jobs[8]), live(jobs[0])}
		require.Equal(t, want, load(t, b).Jobs)
	})

	t.Run("TerminalWithoutPurgeIsNotLoaded", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(with(1, func(j *store.Job) { j.Status = store.Completed })),
			store.InsertJob(with(2, func(j *store.Job) { j.Status = store.Dead })))
		require.Equal(t, loaded{Starts: []store.LoadStart{{MaxID: id(2), Plain: true}}, Order: []string{"start"}}, load(t, b))
	})

	t.Run("MaxIDOutlivesJobs", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(7)), store.InsertJob(job(3)))
		require.Equal(t, id(7), maxID(t, b))
		b.apply(t, store.DeleteJob(id(7)))
		require.Equal(t, id(7), maxID(t, b), "a deleted job's ID still counts")
		b.apply(t, store.DeleteEverything())
		require.Equal(t, id(7), maxID(t, b), "and after a reset")
	})

	t.Run("FollowsUpdates", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)), store.InsertJob(job(3)))
		b.apply(t, store.PatchJob(store.JobPatch{ID: id(3), Queue: "q", Priority: 1, Status: store.Scheduled, ReadyAt: 5}),
			store.SetBudgets(id(2), []store.Binding{{Key: "k", Cost: 4}}),
			store.Finish(id(1), store.Completed, 0, 0, 10, 20))
		got := load(t, b)
		j3 := with(3, func(j *store.Job) { j.Queue, j.Priority, j.Status, j.ReadyAt = "q", 1, store.Scheduled, 5 })
		j2 := with(2, func(j *store.Job) { j.Budgets = []store.Binding{{Key: "k", Cost: 4}} })
		require.Equal(t, []store.LiveJob{live(j3), live(j2)}, got.Jobs)
		require.Equal(t, []purge{{id(1), 20}}, got.Purges)
	})

	t.Run("OneSnapshot", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		var ops []store.Op
		for n := range 300 {
			ops = append(ops, store.InsertJob(job(n)))
		}
		b.apply(t, append(ops, store.PutBudget(store.Budget{Key: "k", Allocation: 1, Strategy: store.WhileInFlight}))...)

		// Once the load has begun, jobs come and go and the budget is
		// deleted: the load goes on as of its start.
		var got []string
		changed := false
		err := b.s.Load(b.ctx, store.Loader{
			Budget: func(store.Budget) error {
				b.apply(t, store.InsertJob(with(1000, func(j *store.Job) { j.Priority = 0 })), store.DeleteJob(id(150)),
					store.DeleteJob(id(299)), store.DeleteBudget("k"))
				changed = true
				return nil
			},
			Job: func(j store.LiveJob) error { got = append(got, j.ID); return nil },
		})
		require.NoError(t, err)
		require.True(t, changed)
		require.Equal(t, ids(upTo(300, 1)...), got)
		require.Equal(t, id(1000), maxID(t, b), "and a new load sees the change")
	})

	t.Run("StartTellsWhetherTheLiveJobsArePlain", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		plain := func() bool {
			starts := load(t, b).Starts
			require.Len(t, starts, 1)
			return starts[0].Plain
		}
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(keyed(2, "k", store.UniqueExists)),
			store.InsertJob(with(3, func(j *store.Job) { j.Batch = &store.BatchConfig{Key: "b", When: "true", Fold: "$new"} })))
		require.False(t, plain(), "a live job with a unique key and one in a batch")
		b.apply(t, store.Finish(id(3), store.Completed, 0, 0, 10, 20))
		require.False(t, plain(), "a live job with a unique key")
		b.apply(t, store.Finish(id(2), store.Completed, 0, 0, 10, 20))
		require.True(t, plain(), "keys and batches of finished jobs only")
		b.apply(t, store.InsertJob(with(4, func(j *store.Job) {
			j.Status, j.Batch = store.InFlight, &store.BatchConfig{Key: "b", When: "true", Fold: "$new"}
		})))
		require.False(t, plain(), "an in-flight batched job")
	})

	t.Run("StartComesInTheSnapshot", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)))
		// What commits once Start is called (the core returns the last
		// run's in-flight jobs to ready there) is not read.
		var got []string
		err := b.s.Load(b.ctx, store.Loader{
			Start: func(store.LoadStart) error {
				b.apply(t, store.InsertJob(job(3)), store.DeleteJob(id(1)))
				return nil
			},
			Job: func(j store.LiveJob) error { got = append(got, j.ID); return nil },
		})
		require.NoError(t, err)
		require.Equal(t, ids(1, 2), got)
	})

	t.Run("StopsAtTheFirstError", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		var ops []store.Op
		for n := range 50 {
			ops = append(ops, store.InsertJob(job(n)))
		}
		b.apply(t, ops...)
		calls, later := 0, 0
		err := b.s.Load(b.ctx, store.Loader{
			Job:    func(store.LiveJob) error { calls++; return errStop },
			Purge:  func(string, int64) error { later++; return nil },
			Unique: func(store.UniqueJob) error { later++; return nil },
		})
		require.ErrorIs(t, err, errStop)
		require.Equal(t, 1, calls)
		require.Zero(t, later)
	})
}
