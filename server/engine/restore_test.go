package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// The serving restore is checked against a plain model of the rule for
// jobs of cost 1: a taker receives, of every job waiting now (loaded, still
// in the store, or enqueued meanwhile), the earliest by (priority, id)
// whose budgets all have a token. The engine may deliver later than the
// model (it waits for jobs still to load) but never another job.

// restoreModel is that model.
type restoreModel struct {
	waiting  map[string]restoreJob
	inFlight map[string]restoreJob
	// tokens left of the time_based budget "tb" (the clock stands still),
	// and jobs in flight bound to the while_in_flight budget "w".
	tbLeft, wInFlight int
}

type restoreJob struct {
	id       string
	priority uint16
	budget   string // "", "w" or "tb"
}

const restoreWAllocation, restoreTBAllocation = 2, 5

func (m *restoreModel) affordable(j restoreJob) bool {
	switch j.budget {
	case "w":
		return m.wInFlight < restoreWAllocation
	case "tb":
		return m.tbLeft > 0
	}
	return true
}

// best returns the job a taker must receive now, if any.
func (m *restoreModel) best() (restoreJob, bool) {
	var best restoreJob
	found := false
	for _, j := range m.waiting {
		if m.affordable(j) && (!found || j.priority < best.priority || j.priority == best.priority && j.id < best.id) {
			best, found = j, true
		}
	}
	return best, found
}

func (m *restoreModel) dispatch(id string) {
	j := m.waiting[id]
	delete(m.waiting, id)
	m.inFlight[id] = j
	switch j.budget {
	case "w":
		m.wInFlight++
	case "tb":
		m.tbLeft--
	}
}

func (m *restoreModel) ack(id string) {
	if m.inFlight[id].budget == "w" {
		m.wInFlight--
	}
	delete(m.inFlight, id)
}

type restoreRun struct {
	t         *testing.T
	rng       *rand.Rand
	tb        *testBundle
	m         *restoreModel
	tk        *Taker
	delivered int
	log       []string
}

// check compares what the taker received since the last call with the
// model, one job at a time, in the order the engine dispatched them.
func (r *restoreRun) check() {
	r.t.Helper()
	for _, j := range r.tk.Drain(nil) {
		want, ok := r.m.best()
		if !ok || want.id != j.ID {
			r.t.Fatalf("received %s (priority %d, budgets %v), the model gives %+v (found %v, w in flight %d, tb left %d); steps:\n%v", j.ID, j.Priority, j.Budgets, want, ok, r.m.wInFlight, r.m.tbLeft, r.log)
		}
		r.m.dispatch(j.ID)
		r.delivered++
		r.log = append(r.log, "got "+j.ID)
	}
}

func (r *restoreRun) randomJob() (uint16, string) {
	return uint16(r.rng.IntN(3)), []string{"", "", "w", "tb"}[r.rng.IntN(4)]
}

func binds(budget string) []BindingSpec {
	if budget == "" {
		return nil
	}
	return []BindingSpec{{Key: budget, Cost: 1}}
}

// enqueue adds a job while the restore serves: its ID sorts after every
// stored one.
func (r *restoreRun) enqueue() {
	prio, budget := r.randomJob()
	jobs, w, err := r.tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Priority: prio, Payload: []byte("{}"), Budgets: binds(budget)}})
	require.NoError(r.t, err)
	require.NoError(r.t, w.Wait(context.Background()))
	r.m.waiting[jobs[0].ID] = restoreJob{id: jobs[0].ID, priority: prio, budget: budget}
	r.log = append(r.log, fmt.Sprintf("enqueue %s p%d %s", jobs[0].ID, prio, budget))
	r.tb.e.Admit([]string{jobs[0].ID})
}

func (r *restoreRun) ackSome() {
	ids := make([]string, 0, len(r.m.inFlight))
	for id := range r.m.inFlight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if r.rng.IntN(2) == 0 {
			missing, _ := r.tb.e.Ack([]string{id})
			require.Empty(r.t, missing)
			r.m.ack(id)
			r.log = append(r.log, "ack "+id)
			r.check() // each ack is an operation the engine settles after
		}
	}
}

func TestRestorer_ServesInTheOneOrder(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			testServingRestore(t, seed)
		})
	}
}

func testServingRestore(t *testing.T, seed uint64) {
	r := &restoreRun{t: t, rng: rand.New(rand.NewPCG(seed, 7)), tb: setup(t),
		m: &restoreModel{waiting: map[string]restoreJob{}, inFlight: map[string]restoreJob{}, tbLeft: restoreTBAllocation}}
	// The store's jobs, in the order it reads them.
	stored := make([]store.LiveJob, 20+r.rng.IntN(200))
	old := jobid.New(func() time.Time { return epoch.Add(-time.Hour) })
	for i := range stored {
		prio, budget := r.randomJob()
		status := []store.Status{store.Ready, store.Ready, store.InFlight}[r.rng.IntN(3)]
		stored[i] = store.LiveJob{ID: old.Next(), Queue: "q", Type: "t", Priority: prio, Status: status, Budgets: bindingsOf(budget)}
		r.m.waiting[stored[i].ID] = restoreJob{id: stored[i].ID, priority: prio, budget: budget}
	}
	slices.SortFunc(stored, func(a, b store.LiveJob) int {
		if a.Priority != b.Priority {
			return int(a.Priority) - int(b.Priority)
		}
		return compareStrings(a.ID, b.ID)
	})

	rs := r.tb.e.Restore()
	rs.step = 1 + r.rng.IntN(30)
	rs.Budget(store.Budget{Key: "w", Allocation: restoreWAllocation, Strategy: store.WhileInFlight})
	rs.Budget(store.Budget{Key: "tb", Allocation: restoreTBAllocation, Strategy: store.TimeBased, DurationMs: 3_600_000})
	rs.MaxID(stored[len(stored)-1].ID)
	require.True(t, rs.Serve())
	r.tk = r.tb.e.NewTaker(nil, 1+r.rng.IntN(4))
	for len(stored) > 0 {
		n := min(len(stored), 1+r.rng.IntN(25))
		require.NoError(t, rs.Jobs(stored[:n]))
		r.log = append(r.log, fmt.Sprintf("loaded %d up to %s", n, stored[n-1].ID))
		stored = stored[n:]
		r.check()
		for range r.rng.IntN(3) {
			r.enqueue()
			r.check()
		}
		r.ackSome()
	}
	during := r.delivered
	rs.Finish()
	r.log = append(r.log, "finished")
	r.check()
	for len(r.m.inFlight) > 0 {
		r.ackSome()
	}
	_, more := r.m.best()
	require.False(t, more, "after the load every affordable job is delivered")
	require.Positive(t, during, "jobs are delivered while the rest loads")
	for _, j := range r.m.waiting {
		require.Equal(t, "tb", j.budget, "only jobs of the exhausted time_based budget wait")
	}
}

func bindingsOf(budget string) []store.Binding {
	if budget == "" {
		return nil
	}
	return []store.Binding{{Key: budget, Cost: 1}}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// A family's jobs are ordered by their fair-share tags, which the store's
// order does not follow: such a restore does not serve before the end.
func TestRestorer_DoesNotServeWithAFamily(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	rs := tb.e.Restore()
	rs.Budget(store.Budget{Key: "f", Allocation: 10, Strategy: store.WhileInFlight,
		PerKey: &store.BudgetTemplate{Allocation: 1, Strategy: store.WhileInFlight}})
	require.False(t, rs.Serve())
	require.NoError(t, rs.Job(store.LiveJob{ID: "03hbspbwnw9m04mdludj16jsc", Queue: "q", Type: "t", Status: store.Ready}))
	require.Equal(t, 1, rs.Finish())
}
