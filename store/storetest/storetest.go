// Package storetest is the conformance suite of store.Store: every backend
// runs it from its own tests,
//
//	func TestDB_Conformance(t *testing.T) {
//		storetest.Run(t, func(t testing.TB) store.Store { ... a new, empty store ... })
//	}
//
// It tests the interface only, as the engine and the API use it: every op
// and what it leaves behind (alone, and in groups appended without waiting,
// where a backend may batch and coalesce them), every read and filter, the
// cron groups, Load, GetJobs, Barrier, the sentinel errors, Backup and
// Close, and the unique and batched jobs' columns and ops. Nothing in
// it assumes SQLite; what only one backend does is tested in that
// backend's package.
package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// Run runs the suite. open returns a new, empty store for one test; the
// suite closes it when the test ends. Subtests run in parallel, so open
// must be safe to call concurrently.
func Run(t *testing.T, open func(t testing.TB) store.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(*testing.T, func(testing.TB) *bundle)
	}{
		{"Ops", testOps},
		{"Groups", testGroups},
		{"Reads", testReads},
		{"Filters", testFilters},
		{"Lifecycle", testLifecycle},
		{"Cron", testCron},
		{"Unique", testUnique},
		{"Batches", testBatches},
		{"Copy", testCopy},
		{"CalendarBudgets", testCalendarBudgets},
		{"AdaptiveBudgets", testAdaptiveBudgets},
		{"KeyOverrides", testKeyOverrides},
		{"StartBy", testStartBy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, func(t testing.TB) *bundle { return setup(t, open) })
		})
	}
}

// bundle is what a test works with: a fresh store.
type bundle struct {
	s   store.Store
	ctx context.Context
}

func setup(t testing.TB, open func(testing.TB) store.Store) *bundle {
	t.Helper()
	s := open(t)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return &bundle{s: s, ctx: context.Background()}
}

// apply appends ops as one group and waits for their commit.
func (b *bundle) apply(t testing.TB, ops ...store.Op) {
	t.Helper()
	require.NoError(t, b.s.Append(ops...).Wait(b.ctx))
}

// get returns a job that must exist.
func (b *bundle) get(t testing.TB, id string) store.Job {
	t.Helper()
	j, err := b.s.GetJob(b.ctx, id, 0)
	require.NoError(t, err)
	return j
}

// ids returns the IDs of every stored job, ascending.
func (b *bundle) ids(t testing.TB) []string {
	t.Helper()
	ids, err := b.s.JobIDs(b.ctx, store.Filter{})
	require.NoError(t, err)
	return ids
}

// errors returns every error record of a job, by attempt.
func (b *bundle) errors(t testing.TB, jobID string) []store.ErrorRecord {
	t.Helper()
	recs, more, err := b.s.ListErrors(b.ctx, jobID, 0, store.Asc, 1000)
	require.NoError(t, err)
	require.False(t, more)
	return recs
}

// budgets returns every budget.
func (b *bundle) budgets(t testing.TB) []store.Budget {
	t.Helper()
	bs, err := b.s.Budgets(b.ctx)
	require.NoError(t, err)
	return bs
}

// id returns a job ID that sorts by n, 25 characters like a SCRU128 ID.
func id(n int) string { return fmt.Sprintf("0job%021d", n) }

// job returns a ready job with the given ID number and only required fields.
func job(n int) store.Job {
	return store.Job{
		ID:       id(n),
		Type:     "send_email",
		Queue:    "default",
		Priority: 32768,
		Status:   store.Ready,
		Payload:  fmt.Appendf(nil, `{"n":%d}`, n),
		ReadyAt:  1_700_000_000_000 + int64(n),
	}
}

// with returns job(n) changed by change.
func with(n int, change func(*store.Job)) store.Job {
	j := job(n)
	change(&j)
	return j
}

func ptr[T any](v T) *T { return &v }

func jobIDs(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func ids(ns ...int) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, id(n))
	}
	return out
}
