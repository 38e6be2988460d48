package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/archive"
)

// Populate fills an empty store with a little of everything a backup
// carries: budgets (a calendar one with what it spent), cron groups, more jobs than one page of a copy's reads,
// error records, unique keys whose holders are not the ones inserting them
// in ID order would choose, and a deleted job that only the job-ID
// high-water mark remembers. It returns that mark.
func Populate(t testing.TB, s store.Store) (highWater string) {
	t.Helper()
	ctx := context.Background()
	apply := func(ops ...store.Op) { require.NoError(t, s.Append(ops...).Wait(ctx)) }
	apply(store.PutBudget(store.Budget{Key: "k", Allocation: 2, Strategy: store.WhileInFlight, CreatedAt: 1, UpdatedAt: 1}),
		store.PutBudget(store.Budget{Key: "tenant", Allocation: 9, Strategy: store.WhileInFlight, CreatedAt: 2, UpdatedAt: 3,
			PerKey: &store.BudgetTemplate{Allocation: 1, Strategy: store.WhileInFlight},
			Keys:   map[string]store.KeyOverride{"acme": {Weight: 3, Allocation: 2}}}),
		store.PutBudget(store.Budget{Key: "daily", Allocation: 10, Strategy: store.Calendar, CreatedAt: 4, UpdatedAt: 4,
			Reset: "0 0 * * *", Timezone: "Europe/Paris"}),
		store.SpendBudget("daily", store.Spent{EndsAt: 86_400_000, Used: 4}),
		store.PutCronGroup(store.CronGroup{Name: "g", Paused: true, PausedAt: 5}),
		store.PutCronEntry(cronEntry("g", "b")), store.PutCronEntry(cronEntry("g", "a")))
	var jobs []store.Op
	for n := range 520 {
		jobs = append(jobs, store.InsertJob(job(n)))
	}
	apply(jobs...)
	apply(store.InsertJob(keyed(1001, "k", store.UniqueExists)), store.InsertJob(keyed(1002, "k", store.UniqueExists)),
		store.InsertJob(keyed(1003, "free", store.UniqueQueued)))
	apply(store.ReleaseUniqueKey(id(1002)), store.HoldUniqueKey(id(1001)), store.ReleaseUniqueKey(id(1003)),
		store.AddError(store.ErrorRecord{JobID: id(1001), Attempt: 1, Message: "boom", ErrorType: "E", DequeuedAt: 7, FailedAt: 8}),
		store.AddError(store.ErrorRecord{JobID: id(1001), Attempt: 2, Message: "again", Backtrace: "at x", DequeuedAt: 9, FailedAt: 10}),
		store.AddError(store.ErrorRecord{JobID: id(3), Attempt: 1, Message: "once", DequeuedAt: 11, FailedAt: 12}))
	apply(store.InsertJob(with(1004, func(j *store.Job) { j.StartBy = 1_800_000_000_000 })))
	apply(store.InsertJob(job(2000)))
	apply(store.DeleteJob(id(2000)))
	return id(2000)
}

// RequireSameContent checks that got holds what want holds, as the reads
// and Load tell it: jobs, error records, budgets, cron groups and unique
// keys' holders (not the job-ID high-water mark, which no op carries).
func RequireSameContent(t testing.TB, want, got store.Store) {
	t.Helper()
	ctx := context.Background()
	wantJobs, wantErrs := allJobs(t, want)
	gotJobs, gotErrs := allJobs(t, got)
	require.Equal(t, wantJobs, gotJobs)
	require.Equal(t, wantErrs, gotErrs)
	wb, err := want.Budgets(ctx)
	require.NoError(t, err)
	gb, err := got.Budgets(ctx)
	require.NoError(t, err)
	require.Equal(t, wb, gb)
	wc, err := want.CronGroups(ctx)
	require.NoError(t, err)
	gc, err := got.CronGroups(ctx)
	require.NoError(t, err)
	require.Equal(t, wc, gc)
	require.Equal(t, load(t, &bundle{s: want, ctx: ctx}).Unique, load(t, &bundle{s: got, ctx: ctx}).Unique)
}

// allJobs returns every job of s, and every error record, by job and
// attempt.
func allJobs(t testing.TB, s store.Store) ([]store.Job, []store.ErrorRecord) {
	t.Helper()
	b := &bundle{s: s, ctx: context.Background()}
	jobs, more, err := s.ListJobs(b.ctx, store.Filter{}, "", store.Asc, 10_000)
	require.NoError(t, err)
	require.False(t, more)
	var errs []store.ErrorRecord
	for _, j := range jobs {
		errs = append(errs, b.errors(t, j.ID)...)
	}
	return jobs, errs
}

// testCopy checks archive.Copy from one store of the backend to another
// through the store's reads (archive.Reads): what a restore does once the
// backup's database is open.
func testCopy(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("Copy", func(t *testing.T) {
		t.Parallel()
		src, dst := newB(t), newB(t)
		mark := Populate(t, src.s)
		got, err := archive.Copy(src.ctx, archive.Reads(src.s), dst.s)
		require.NoError(t, err)
		require.Equal(t, mark, got, "the high-water mark outlives the deleted job")
		RequireSameContent(t, src.s, dst.s)
	})
}
