package core

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// scriptedLoad is a store whose Load replays a script, stopping at the
// first error a callback returns, as Store.Load does.
type scriptedLoad struct {
	store.Store // nil: only Load is called
	budgets     []store.Budget
	jobs        []store.LiveJob
	purges      int
	maxID       string
	plain       bool
	jobsGiven   int
}

func (s *scriptedLoad) Load(_ context.Context, l store.Loader) error {
	for _, b := range s.budgets {
		if err := l.Budget(b); err != nil {
			return err
		}
	}
	if err := l.Start(store.LoadStart{MaxID: s.maxID, Plain: s.plain}); err != nil {
		return err
	}
	for _, j := range s.jobs {
		s.jobsGiven++
		if err := l.Job(j); err != nil {
			return err
		}
	}
	for i := range s.purges {
		// Far off: nothing fires (the engine has no journal).
		if err := l.Purge(fmt.Sprintf("%025d", i), 4_000_000_000_000); err != nil {
			return err
		}
	}
	return nil
}

func newRestoreEngine(t *testing.T) (*engine.Engine, *jobid.Generator) {
	t.Helper()
	clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	ids := jobid.New(clk.Now)
	return engine.New(engine.Config{}, clk, nil, ids), ids
}

// liveJobs makes n ready jobs of queue q, bound to key when it is set, with
// IDs from ids in order.
func liveJobs(ids *jobid.Generator, n int, q, key string) []store.LiveJob {
	jobs := make([]store.LiveJob, n)
	for i := range jobs {
		jobs[i] = store.LiveJob{ID: ids.Next(), Queue: q, Type: "t", Status: store.Ready}
		if key != "" {
			jobs[i].Budgets = []store.Binding{{Key: key, Cost: 1}}
		}
	}
	return jobs
}

func TestLoad_IndexesEveryJobAcrossBatches(t *testing.T) {
	t.Parallel()
	e, ids := newRestoreEngine(t)
	src := jobid.New(func() time.Time { return time.UnixMilli(1_700_000_000_000) })
	n := 3*loadBatch + 17
	st := &scriptedLoad{
		budgets: []store.Budget{{Key: "b", Allocation: 5, Strategy: store.WhileInFlight}},
		jobs:    append(liveJobs(src, n/2, "q", "b"), liveJobs(src, n-n/2, "q", "")...),
		purges:  3,
	}
	future := jobid.New(func() time.Time { return time.UnixMilli(1_900_000_000_000) }).Next()
	st.maxID = future

	r := e.Restore()
	err := load(t.Context(), st, r, maxIDOnly(r))
	require.Equal(t, n, r.Finish())
	require.NoError(t, err)
	require.Equal(t, int64(n), e.Stats().Jobs.Ready)
	for _, j := range []store.LiveJob{st.jobs[0], st.jobs[n/2], st.jobs[n-1]} {
		got, ok := e.Job(j.ID)
		require.True(t, ok, j.ID)
		require.Equal(t, j.Budgets, bindingsOf(got))
	}
	require.Greater(t, ids.Next(), future, "IDs continue after the store's greatest")
}

func TestLoad_StopsAtTheFirstIndexingError(t *testing.T) {
	t.Parallel()
	e, _ := newRestoreEngine(t)
	src := jobid.New(func() time.Time { return time.UnixMilli(1_700_000_000_000) })
	jobs := liveJobs(src, 20*loadBatch, "q", "")
	jobs[loadBatch+3].Budgets = []store.Binding{{Key: "missing", Cost: 1}}
	st := &scriptedLoad{jobs: jobs, purges: 2}

	r := e.Restore()
	err := load(t.Context(), st, r, maxIDOnly(r))
	r.Finish()
	require.ErrorContains(t, err, jobs[loadBatch+3].ID)
	require.ErrorContains(t, err, "missing")
	// The reader stops within the batches in flight, not at the end.
	require.Less(t, st.jobsGiven, (loadDepth+4)*loadBatch)
}

func TestLoad_NoJobs(t *testing.T) {
	t.Parallel()
	e, _ := newRestoreEngine(t)
	st := &scriptedLoad{budgets: []store.Budget{{Key: "b", Allocation: 1, Strategy: store.WhileInFlight}}, purges: 1}
	r := e.Restore()
	require.NoError(t, load(t.Context(), st, r, maxIDOnly(r)))
	require.Zero(t, r.Finish())
	require.Len(t, e.Stats().Budgets, 1)
}

// maxIDOnly is the start of a load that only observes the greatest ID.
func maxIDOnly(r *engine.Restorer) func(store.LoadStart) error {
	return func(s store.LoadStart) error { r.MaxID(s.MaxID); return nil }
}

func bindingsOf(j store.Job) []store.Binding {
	if len(j.Budgets) == 0 {
		return nil
	}
	return j.Budgets
}
