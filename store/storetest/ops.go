package storetest

import (
	"fmt"

	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testOps checks what each op leaves behind, one group at a time.
func testOps(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("InsertJobRoundTrip", func(t *testing.T) {
		t.Parallel()
		full := store.Job{
			ID: id(1), Type: "t", Queue: "q", Priority: math.MaxUint16, Status: store.Dead,
			Payload: []byte(" {\"a\": [1, 2.50, \"é\\u00e9\"]}\n"), // verbatim, not re-encoded
			ReadyAt: 1, Attempts: math.MaxUint32,
			RetryLimit: ptr(uint32(math.MaxUint32)),
			Backoff:    &store.Backoff{Exponent: 1.1, BaseMs: math.MaxUint32, JitterMs: 7},
			Retention:  &store.Retention{CompletedMs: ptr(uint64(0)), DeadMs: ptr(uint64(math.MaxUint64))},
			DequeuedAt: 2, FailedAt: 3, CompletedAt: 4, PurgeAt: 5,
			Budgets: []store.Binding{{Key: "b", Cost: 3}, {Key: "a\"x", Cost: math.MaxInt64}, {Key: "é<&>", Cost: 1}},
			FairTag: math.MaxInt64, StartBy: math.MaxInt64,
		}
		for name, tc := range map[string]struct {
			in, want store.Job
		}{
			"Minimal":            {in: job(1), want: job(1)},
			"Full":               {in: full, want: full},
			"RetryLimitZero":     {in: with(1, func(j *store.Job) { j.RetryLimit = ptr(uint32(0)) }), want: with(1, func(j *store.Job) { j.RetryLimit = ptr(uint32(0)) })},
			"RetentionCompleted": {in: with(1, func(j *store.Job) { j.Retention = &store.Retention{CompletedMs: ptr(uint64(9))} }), want: with(1, func(j *store.Job) { j.Retention = &store.Retention{CompletedMs: ptr(uint64(9))} })},
			"RetentionDead":      {in: with(1, func(j *store.Job) { j.Retention = &store.Retention{DeadMs: ptr(uint64(0))} }), want: with(1, func(j *store.Job) { j.Retention = &store.Retention{DeadMs: ptr(uint64(0))} })},
			"RetentionEmpty":     {in: with(1, func(j *store.Job) { j.Retention = &store.Retention{} }), want: job(1)},
			"BackoffZero":        {in: with(1, func(j *store.Job) { j.Backoff = &store.Backoff{} }), want: with(1, func(j *store.Job) { j.Backoff = &store.Backoff{} })},
			"BudgetsEmpty":       {in: with(1, func(j *store.Job) { j.Budgets = []store.Binding{} }), want: job(1)},
			"PayloadNil":         {in: with(1, func(j *store.Job) { j.Payload = nil }), want: with(1, func(j *store.Job) { j.Payload = nil })},
			"PayloadEmptyIsNil":  {in: with(1, func(j *store.Job) { j.Payload = []byte{} }), want: with(1, func(j *store.Job) { j.Payload = nil })},
			"PayloadLarge":       {in: with(1, func(j *store.Job) { j.Payload = large() }), want: with(1, func(j *store.Job) { j.Payload = large() })},
			"FairTag":            {in: with(1, func(j *store.Job) { j.FairTag = 1_700_000_000_001 }), want: with(1, func(j *store.Job) { j.FairTag = 1_700_000_000_001 })},
			"FairTagNegative":    {in: with(1, func(j *store.Job) { j.FairTag = -1 }), want: with(1, func(j *store.Job) { j.FairTag = -1 })},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := newB(t)
				b.apply(t, store.InsertJob(tc.in))
				require.Equal(t, tc.want, b.get(t, tc.in.ID))
				listed, _, err := b.s.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 1)
				require.NoError(t, err)
				require.Equal(t, []store.Job{tc.want}, listed)
				got, err := b.s.GetJobs(b.ctx, []string{tc.in.ID})
				require.NoError(t, err)
				require.Equal(t, []store.Job{tc.want}, got)
			})
		}
	})

	// A bulk enqueue in one group: jobs that share everything but their
	// IDs and payloads, as the engine stamps them, with a few unlike the
	// rest in one field each (a store may write the alike ones together,
	// binding what they share once). Each reads back as it went in.
	t.Run("BulkInsertRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// Far apart, so that no two share a chunk of up to 32 jobs.
		unlike := map[int]func(*store.Job){
			37:  func(j *store.Job) { j.Queue = "other" },
			70:  func(j *store.Job) { j.Type = "other" },
			101: func(j *store.Job) { j.Priority = 7 },
			134: func(j *store.Job) { j.Status = store.Scheduled },
			165: func(j *store.Job) { j.Budgets = []store.Binding{{Key: "b", Cost: 2}} },
			198: func(j *store.Job) { j.FairTag = 1_700_000_000_123 },
			229: func(j *store.Job) { j.Attempts = 3 },
			262: func(j *store.Job) { j.Payload = nil },
			293: func(j *store.Job) { j.ReadyAt++ },
		}
		var jobs []store.Job
		var ops []store.Op
		for n := range 400 {
			j := with(n, func(j *store.Job) { j.ReadyAt = 1_700_000_000_000 })
			if change := unlike[n]; change != nil {
				change(&j)
			}
			jobs = append(jobs, j)
			ops = append(ops, store.InsertJob(j))
		}
		b.apply(t, ops...)
		got, err := b.s.GetJobs(b.ctx, jobIDs(jobs))
		require.NoError(t, err)
		require.Equal(t, jobs, got)
		for _, j := range []store.Job{jobs[0], jobs[134], jobs[262], jobs[399]} {
			require.Equal(t, j, b.get(t, j.ID))
		}
	})

	t.Run("InsertJobDuplicateFails", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)))
		changed := with(1, func(j *store.Job) { j.Queue = "other" })
		require.Error(t, b.s.Append(store.InsertJob(changed)).Wait(b.ctx))
		require.Equal(t, job(1), b.get(t, id(1)))
	})

	t.Run("PutJobKeepsThePayload", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		in := with(1, func(j *store.Job) {
			j.RetryLimit, j.Backoff = ptr(uint32(3)), &store.Backoff{Exponent: 2, BaseMs: 1, JitterMs: 1}
			j.Retention, j.Budgets = &store.Retention{DeadMs: ptr(uint64(5))}, []store.Binding{{Key: "k", Cost: 2}}
			j.FairTag = 77
		})
		b.apply(t, store.InsertJob(in))
		// Every field is written but the payload and the fair tag, and
		// options are cleared.
		put := with(1, func(j *store.Job) {
			j.Queue, j.Type, j.Priority, j.Status, j.ReadyAt, j.Attempts = "q2", "t2", 7, store.Dead, 9, 4
			j.DequeuedAt, j.FailedAt, j.CompletedAt, j.PurgeAt = 1, 2, 3, 4
			j.Payload, j.FairTag = []byte(`"ignored"`), 5
		})
		b.apply(t, store.PutJob(put))
		want := put
		want.Payload, want.FairTag = in.Payload, in.FairTag
		require.Equal(t, want, b.get(t, id(1)))

		b.apply(t, store.PutJob(with(2, func(*store.Job) {}))) // missing job: no-op
		require.Equal(t, ids(1), b.ids(t))
	})

	t.Run("SetStatus", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(with(1, func(j *store.Job) { j.DequeuedAt = 10 })))

		b.apply(t, store.SetStatus(id(1), store.Ready, 0))
		require.EqualValues(t, 10, b.get(t, id(1)).DequeuedAt, "0 leaves dequeued_at")
		b.apply(t, store.SetStatus(id(1), store.InFlight, 1_796_143_186_879))
		want := with(1, func(j *store.Job) { j.Status, j.DequeuedAt = store.InFlight, 1_796_143_186_879 })
		require.Equal(t, want, b.get(t, id(1)))

		b.apply(t, store.SetStatus(id(2), store.InFlight, 20)) // missing job: no-op
		require.Equal(t, ids(1), b.ids(t))
	})

	t.Run("DispatchMark", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		const ms = 1_796_143_186_879 // a real time: past 32 bits
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)), store.InsertJob(job(3)))
		// A store may hold marks back: what follows must see them all the
		// same, and every read after a Barrier.
		b.apply(t, store.DispatchMark(id(1), ms))
		b.apply(t, store.DispatchMark(id(2), ms+1))
		b.apply(t, store.DispatchMark(id(3), ms+2))
		b.apply(t, store.SetStatus(id(2), store.Ready, 0))
		b.apply(t, store.DeleteJob(id(3)))
		b.apply(t, store.DispatchMark(id(9), ms+3)) // missing job: no-op
		require.NoError(t, b.s.Barrier(b.ctx))
		require.Equal(t, with(1, func(j *store.Job) { j.Status, j.DequeuedAt = store.InFlight, ms }), b.get(t, id(1)))
		require.Equal(t, with(2, func(j *store.Job) { j.DequeuedAt = ms + 1 }), b.get(t, id(2)), "requeued after its mark")
		require.Equal(t, ids(1, 2), b.ids(t))
		n, err := b.s.CountJobs(b.ctx, store.Filter{Statuses: []store.Status{store.InFlight}})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
	})

	t.Run("Retry", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		in := with(1, func(j *store.Job) { j.Status, j.DequeuedAt, j.Attempts = store.InFlight, 50, 1 })
		b.apply(t, store.InsertJob(in))
		b.apply(t, store.Retry(id(1), 2, 60, 90, store.Scheduled))
		want := in
		want.Attempts, want.FailedAt, want.ReadyAt, want.Status = 2, 60, 90, store.Scheduled
		require.Equal(t, want, b.get(t, id(1)))

		b.apply(t, store.Retry(id(2), 2, 60, 90, store.Ready)) // missing job: no-op
		require.Equal(t, ids(1), b.ids(t))
	})

	t.Run("Finish", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		in := with(1, func(j *store.Job) {
			j.Status, j.DequeuedAt, j.Budgets = store.InFlight, 50, []store.Binding{{Key: "k", Cost: 1}}
		})
		b.apply(t, store.InsertJob(in), store.InsertJob(in2()))
		b.apply(t, store.Finish(id(1), store.Completed, 0, 0, 70, 1070))
		want := in
		want.Status, want.CompletedAt, want.PurgeAt = store.Completed, 70, 1070
		require.Equal(t, want, b.get(t, id(1)))

		b.apply(t, store.Finish(id(2), store.Dead, 3, 80, 0, 0))
		want2 := in2()
		want2.Status, want2.Attempts, want2.FailedAt = store.Dead, 3, 80
		require.Equal(t, want2, b.get(t, id(2)), "purge_at 0 is unset")

		b.apply(t, store.Finish(id(3), store.Dead, 3, 80, 0, 1)) // missing job: no-op
		require.Equal(t, ids(1, 2), b.ids(t))
	})

	t.Run("PatchJob", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		in := with(1, func(j *store.Job) {
			j.Status, j.Attempts, j.FailedAt, j.DequeuedAt = store.Scheduled, 2, 5, 4
			j.RetryLimit, j.Backoff = ptr(uint32(3)), &store.Backoff{Exponent: 2, BaseMs: 1, JitterMs: 1}
			j.Retention, j.Budgets = &store.Retention{DeadMs: ptr(uint64(5))}, []store.Binding{{Key: "k", Cost: 2}}
		})
		b.apply(t, store.InsertJob(in))

		// Overrides cleared; the fields a patch does not name are kept.
		b.apply(t, store.PatchJob(store.JobPatch{ID: id(1), Queue: "q2", Priority: 3, Status: store.Ready, ReadyAt: 77}))
		want := in
		want.Queue, want.Priority, want.Status, want.ReadyAt = "q2", 3, store.Ready, 77
		want.RetryLimit, want.Backoff, want.Retention = nil, nil, nil
		require.Equal(t, want, b.get(t, id(1)))

		// Overrides set.
		p := store.JobPatch{ID: id(1), Queue: "q3", Priority: 4, Status: store.Scheduled, ReadyAt: 88,
			RetryLimit: ptr(uint32(0)), Backoff: &store.Backoff{Exponent: 1.5, BaseMs: 2, JitterMs: 3},
			Retention: &store.Retention{CompletedMs: ptr(uint64(6))}}
		b.apply(t, store.PatchJob(p))
		want.Queue, want.Priority, want.Status, want.ReadyAt = "q3", 4, store.Scheduled, 88
		want.RetryLimit, want.Backoff, want.Retention = p.RetryLimit, p.Backoff, p.Retention
		require.Equal(t, want, b.get(t, id(1)))

		b.apply(t, store.PatchJob(store.JobPatch{ID: id(2), Queue: "x"})) // missing job: no-op
		require.Equal(t, ids(1), b.ids(t))
	})

	t.Run("SetBudgets", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)))
		bs := []store.Binding{{Key: "z", Cost: 2}, {Key: "a", Cost: 1}}
		b.apply(t, store.SetBudgets(id(1), bs))
		require.Equal(t, with(1, func(j *store.Job) { j.Budgets = bs }), b.get(t, id(1)), "in the order given")
		b.apply(t, store.SetBudgets(id(1), nil))
		require.Equal(t, job(1), b.get(t, id(1)))

		b.apply(t, store.SetBudgets(id(2), bs)) // missing job: no-op
		require.Equal(t, ids(1), b.ids(t))
	})

	t.Run("DeleteJob", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)),
			store.AddError(store.ErrorRecord{JobID: id(1), Attempt: 1, Message: "m"}))
		b.apply(t, store.DeleteJob(id(1)), store.DeleteJob(id(3)))
		require.Equal(t, ids(2), b.ids(t))
		_, err := b.s.GetJob(b.ctx, id(1), 0)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Empty(t, b.errors(t, id(1)), "its error records go with it")

		// The ID can be used again, and the new job has no old records.
		b.apply(t, store.InsertJob(job(1)))
		require.Equal(t, job(1), b.get(t, id(1)))
		require.Empty(t, b.errors(t, id(1)))
	})

	t.Run("DeleteJobsTogether", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// Records written in every way a store may take them: with the
		// insert, in groups of their own, replaced, and none at all.
		b.apply(t, store.InsertJob(job(1)), store.AddError(store.ErrorRecord{JobID: id(1), Attempt: 1, Message: "a"}))
		for n := 2; n <= 8; n++ {
			b.apply(t, store.InsertJob(with(n, func(j *store.Job) { j.Payload = []byte(fmt.Sprint(n)) })))
		}
		b.apply(t, store.Retry(id(2), 1, 5, 6, store.Ready))
		b.apply(t, store.AddError(store.ErrorRecord{JobID: id(2), Attempt: 1, Message: "b"}))
		b.apply(t, store.AddError(store.ErrorRecord{JobID: id(2), Attempt: 1, Message: "b again"}))
		b.apply(t, store.AddError(store.ErrorRecord{JobID: id(5), Attempt: 3, Message: "c"}),
			store.AddError(store.ErrorRecord{JobID: id(5), Attempt: 4, Message: "d"}))

		var dels []store.Op
		for n := 1; n <= 6; n++ {
			dels = append(dels, store.DeleteJob(id(n)))
		}
		b.apply(t, dels...) // a batch of acks
		b.apply(t, store.DeleteJob(id(7)))
		require.Equal(t, ids(8), b.ids(t))
		got, err := b.s.Payloads(b.ctx, ids(upTo(9, 1)...))
		require.NoError(t, err)
		require.Equal(t, []store.JobPayload{{ID: id(8), Payload: []byte("8")}}, got, "the payloads go with their jobs")

		// New jobs of the same IDs have none of the old records.
		for n := 1; n <= 7; n++ {
			b.apply(t, store.InsertJob(job(n)))
			require.Empty(t, b.errors(t, id(n)), "job %d", n)
		}
	})

	t.Run("AddError", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)))
		r := store.ErrorRecord{JobID: id(1), Attempt: 1, Message: "failed", ErrorType: "E",
			Backtrace: "at x\nat y", DequeuedAt: 4, FailedAt: 5}
		b.apply(t, store.AddError(r), store.AddError(store.ErrorRecord{JobID: id(2), Attempt: 1, Message: "m"}))
		got, err := b.s.GetError(b.ctx, id(1), 1)
		require.NoError(t, err)
		require.Equal(t, r, got)
		_, err = b.s.GetError(b.ctx, id(2), 1)
		require.ErrorIs(t, err, store.ErrNotFound, "no record without its job")

		// A record of the same attempt replaces the old one.
		r2 := store.ErrorRecord{JobID: id(1), Attempt: 1, Message: "again", DequeuedAt: 6, FailedAt: 7}
		b.apply(t, store.AddError(r2))
		require.Equal(t, []store.ErrorRecord{r2}, b.errors(t, id(1)))
	})

	t.Run("Budgets", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		require.Empty(t, b.budgets(t))
		k2 := store.Budget{Key: "k2", Allocation: 10, Strategy: store.TimeBased, DurationMs: 1000, Burst: 5, CreatedAt: 1, UpdatedAt: 2}
		k1 := store.Budget{Key: "k1", Allocation: 3, Strategy: store.WhileInFlight, CreatedAt: 3, UpdatedAt: 3}
		b.apply(t, store.PutBudget(k2), store.PutBudget(k1))
		require.Equal(t, []store.Budget{k1, k2}, b.budgets(t), "sorted by key")

		k2.Allocation, k2.Burst, k2.UpdatedAt = 20, 0, 9
		b.apply(t, store.PutBudget(k2), store.DeleteBudget("k1"), store.DeleteBudget("absent"))
		require.Equal(t, []store.Budget{k2}, b.budgets(t))
	})

	t.Run("BudgetFamiliesAndPauses", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		family := store.Budget{Key: "tenants", Allocation: 100, Strategy: store.TimeBased, DurationMs: 60_000, CreatedAt: 1, UpdatedAt: 2,
			PerKey:    &store.BudgetTemplate{Allocation: 5, Strategy: store.WhileInFlight},
			SubPauses: map[string]store.Pause{"tenants/acme": {Paused: true}, "tenants/é \"x\"": {PausedUntil: math.MaxInt64}, "tenants/b": {Paused: true, PausedUntil: 1}}}
		paced := store.Budget{Key: "paced", Allocation: 3, Strategy: store.WhileInFlight, CreatedAt: 3, UpdatedAt: 4,
			PerKey: &store.BudgetTemplate{Allocation: math.MaxInt32, Strategy: store.TimeBased, DurationMs: math.MaxInt64, Burst: 7}}
		paused := store.Budget{Key: "p", Allocation: 1, Strategy: store.WhileInFlight, CreatedAt: 5, UpdatedAt: 6, Paused: true}
		until := store.Budget{Key: "u", Allocation: 1, Strategy: store.WhileInFlight, CreatedAt: 7, UpdatedAt: 8, PausedUntil: math.MaxInt64}
		both := store.Budget{Key: "v", Allocation: 1, Strategy: store.WhileInFlight, CreatedAt: 9, UpdatedAt: 9, Paused: true, PausedUntil: 1}
		b.apply(t, store.PutBudget(family), store.PutBudget(paced), store.PutBudget(paused), store.PutBudget(until), store.PutBudget(both))
		want := []store.Budget{paused, paced, family, until, both} // by key
		require.Equal(t, want, b.budgets(t))
		require.Equal(t, want, load(t, b).Budgets)

		// A replacement writes every field: the template and the pause go.
		family.PerKey, family.SubPauses, family.UpdatedAt = nil, nil, 10
		paused.Paused, until.PausedUntil, both.Paused, both.PausedUntil = false, 0, false, 0
		paced.PerKey = &store.BudgetTemplate{Allocation: 1, Strategy: store.WhileInFlight}
		b.apply(t, store.PutBudget(family), store.PutBudget(paced), store.PutBudget(paused), store.PutBudget(until), store.PutBudget(both))
		want = []store.Budget{paused, paced, family, until, both}
		require.Equal(t, want, b.budgets(t))
		require.Equal(t, want, load(t, b).Budgets)
	})

	t.Run("DeleteEverything", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.InsertJob(job(2)),
			store.AddError(store.ErrorRecord{JobID: id(1), Attempt: 1}),
			store.PutBudget(store.Budget{Key: "k", Allocation: 1, Strategy: store.WhileInFlight}))
		b.apply(t, store.DeleteEverything(), store.InsertJob(job(3)))
		require.Equal(t, ids(3), b.ids(t))
		_, err := b.s.GetError(b.ctx, id(1), 1)
		require.ErrorIs(t, err, store.ErrNotFound)
		require.Empty(t, b.budgets(t))

		// Deletes after a reset still take a job's payload and records.
		b.apply(t, store.InsertJob(with(4, func(j *store.Job) { j.Payload = []byte("4") })),
			store.AddError(store.ErrorRecord{JobID: id(4), Attempt: 1}))
		b.apply(t, store.Retry(id(3), 1, 7, 8, store.Ready))
		b.apply(t, store.DeleteJob(id(4)))
		b.apply(t, store.InsertJob(job(4)))
		require.Empty(t, b.errors(t, id(4)))
		got, err := b.s.Payloads(b.ctx, ids(3, 4))
		require.NoError(t, err)
		require.ElementsMatch(t, []store.JobPayload{{ID: id(3), Payload: job(3).Payload, FailedAt: 7}, {ID: id(4), Payload: job(4).Payload}}, got)
	})

	t.Run("RecoverInFlight", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		var ops []store.Op
		for n := range 6 {
			ops = append(ops, store.InsertJob(with(n, func(j *store.Job) {
				j.Status, j.DequeuedAt = store.Status(n%3), 77 // two in flight
			})))
		}
		b.apply(t, ops...)

		n, err := b.s.RecoverInFlight(b.ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		count, err := b.s.CountJobs(b.ctx, store.Filter{Statuses: []store.Status{store.InFlight}})
		require.NoError(t, err)
		require.Zero(t, count)
		got := b.get(t, id(2))
		require.Equal(t, store.Ready, got.Status)
		require.EqualValues(t, 77, got.DequeuedAt, "recovery keeps the last dequeue time")

		n, err = b.s.RecoverInFlight(b.ctx)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// in2 is job 2 with every option set, for ops that must leave them alone.
func in2() store.Job {
	return with(2, func(j *store.Job) {
		j.Status, j.Attempts, j.DequeuedAt = store.InFlight, 2, 40
		j.RetryLimit, j.Backoff = ptr(uint32(2)), &store.Backoff{Exponent: 3, BaseMs: 4, JitterMs: 5}
		j.Retention = &store.Retention{CompletedMs: ptr(uint64(1)), DeadMs: ptr(uint64(2))}
		j.Budgets = []store.Binding{{Key: "k", Cost: 1}}
	})
}

// large returns a payload larger than a database page.
func large() []byte {
	p := []byte(`{"pad":"`)
	for range 20_000 {
		p = append(p, 'x')
	}
	return append(p, `"}`...)
}
