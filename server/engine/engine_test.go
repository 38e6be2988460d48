package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// recJournal records what the engine journals and commits at once.
type recJournal struct {
	mu  sync.Mutex
	ops []store.Op
}

func (r *recJournal) Append(ops ...store.Op) Waiter {
	r.mu.Lock()
	r.ops = append(r.ops, ops...)
	r.mu.Unlock()
	return done{}
}

type dispatch struct {
	id   string
	at   time.Time
	cost map[string]int64
}

type testBundle struct {
	clk        *clock.Fake
	journal    *recJournal
	e          *Engine
	dispatches []dispatch
}

var epoch = time.UnixMilli(1788215727072)

func setup(t testing.TB, tune ...func(*Config)) *testBundle {
	t.Helper()
	tb := &testBundle{clk: clock.NewFake(epoch), journal: &recJournal{}}
	cfg := DefaultConfig()
	cfg.Random = func() float64 { return 0.5 }
	cfg.OnDispatch = func(j store.Job, at time.Time, _ int64) {
		d := dispatch{id: j.ID, at: at, cost: map[string]int64{}}
		for _, b := range j.Budgets {
			d.cost[b.Key] = b.Cost
		}
		tb.dispatches = append(tb.dispatches, d)
	}
	for _, f := range tune {
		f(&cfg)
	}
	tb.e = New(cfg, tb.clk, tb.journal, jobid.New(tb.clk.Now))
	return tb
}

func (tb *testBundle) budget(t testing.TB, key string, alloc int64, strategy string, durMs, burst int64) {
	t.Helper()
	_, _, err := tb.e.PutBudget(key, store.Budget{Allocation: alloc, Strategy: strategy, DurationMs: durMs, Burst: burst}, CreateOnly)
	require.NoError(t, err)
}

type spec struct {
	queue    string
	priority uint16
	readyAt  *int64
	binds    []BindingSpec
}

func bindings(kv ...any) []BindingSpec {
	var out []BindingSpec
	for i := 0; i < len(kv); i += 2 {
		out = append(out, BindingSpec{Key: kv[i].(string), Cost: int64(kv[i+1].(int))})
	}
	return out
}

func (tb *testBundle) enqueue(t testing.TB, s spec) string {
	t.Helper()
	if s.queue == "" {
		s.queue = "q"
	}
	if s.priority == 0 {
		s.priority = 32768
	}
	jobs, w, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: s.queue, Priority: s.priority, Payload: []byte("{}"), ReadyAt: s.readyAt, Budgets: s.binds}})
	require.NoError(t, err)
	require.NoError(t, w.Wait(context.Background()))
	tb.e.Admit([]string{jobs[0].ID})
	return jobs[0].ID
}

func (tb *testBundle) enqueueN(t *testing.T, n int, s spec) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = tb.enqueue(t, s)
	}
	return ids
}

func drainIDs(tk *Taker) []string {
	var ids []string
	for _, j := range tk.Drain(nil) {
		ids = append(ids, j.ID)
	}
	return ids
}

func (tb *testBundle) ack(t testing.TB, ids ...string) {
	t.Helper()
	missing, _ := tb.e.Ack(ids)
	require.Empty(t, missing)
}

func TestEngine_TakeOrder(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, spec{priority: 5})
	b := tb.enqueue(t, spec{priority: 1})
	c := tb.enqueue(t, spec{priority: 5})
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{b, a, c}, drainIDs(tk))
}

func TestEngine_Prefetch(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ids := tb.enqueueN(t, 5, spec{})
	tk := tb.e.NewTaker(nil, 2)
	require.Equal(t, ids[:2], drainIDs(tk))
	require.Empty(t, drainIDs(tk))
	tb.ack(t, ids[0])
	require.Equal(t, ids[2:3], drainIDs(tk))
	missing, _ := tb.e.Ack([]string{ids[0], "nope"})
	require.Equal(t, []string{ids[0], "nope"}, missing)
}

func TestEngine_QueueFilter(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, spec{queue: "a"})
	b := tb.enqueue(t, spec{queue: "b"})
	tkB := tb.e.NewTaker([]string{"b", "c"}, 0)
	require.Equal(t, []string{b}, drainIDs(tkB))
	c := tb.enqueue(t, spec{queue: "c"})
	require.Equal(t, []string{c}, drainIDs(tkB))
	tkA := tb.e.NewTaker([]string{"a"}, 0)
	require.Equal(t, []string{a}, drainIDs(tkA))
}

func TestEngine_GlobalInFlightLimit(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(c *Config) { c.GlobalInFlightLimit = 3 })
	ids := tb.enqueueN(t, 5, spec{})
	t1 := tb.e.NewTaker(nil, 0)
	t2 := tb.e.NewTaker(nil, 0)
	got := append(drainIDs(t1), drainIDs(t2)...)
	require.Len(t, got, 3)
	require.ElementsMatch(t, ids[:3], got, "the first three in (priority, id) order")
	tb.ack(t, got[0])
	got2 := append(drainIDs(t1), drainIDs(t2)...)
	require.Len(t, got2, 1)
	require.Equal(t, ids[3:4], got2)
	require.Equal(t, int64(3), tb.e.Stats().Jobs.InFlight)
}

func TestEngine_ScheduledPromotion(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	at := epoch.Add(5 * time.Second).UnixMilli()
	id := tb.enqueue(t, spec{readyAt: &at})
	tk := tb.e.NewTaker(nil, 0)
	require.Empty(t, drainIDs(tk))
	j, _ := tb.e.Job(id)
	require.Equal(t, store.Scheduled, j.Status)
	tb.clk.Advance(4999 * time.Millisecond)
	require.Empty(t, drainIDs(tk))
	tb.clk.Advance(time.Millisecond)
	require.Equal(t, []string{id}, drainIDs(tk))
	j, _ = tb.e.Job(id)
	require.Equal(t, store.InFlight, j.Status)
	require.Equal(t, at, j.DequeuedAt)
}

func TestEngine_DisconnectRequeues(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ids := tb.enqueueN(t, 3, spec{})
	tk := tb.e.NewTaker(nil, 2)
	require.Equal(t, ids[:2], drainIDs(tk))
	tk.Close()
	j, _ := tb.e.Job(ids[0])
	require.Equal(t, store.Ready, j.Status)
	require.Equal(t, uint32(0), j.Attempts)
	// The store keeps dequeued_at: the requeue leaves it as it is.
	last := tb.journal.ops[len(tb.journal.ops)-1]
	require.Equal(t, store.SetStatus(ids[1], store.Ready, 0), last)
	tk2 := tb.e.NewTaker(nil, 0)
	require.Equal(t, ids, drainIDs(tk2))
}

func TestEngine_FailureBackoffAndDeath(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	limit := uint32(1)
	jobs, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Priority: 1, Payload: []byte("1"), RetryLimit: &limit}})
	require.NoError(t, err)
	id := jobs[0].ID
	tb.e.Admit([]string{id})
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{id}, drainIDs(tk))
	j, _, err := tb.e.Fail(id, Failure{Message: "boom"})
	require.NoError(t, err)
	require.Equal(t, store.Scheduled, j.Status)
	// 1^4·1000 + 15000 + 0.5·30000·1 = 31000 ms
	require.Equal(t, epoch.UnixMilli()+31000, j.ReadyAt)
	require.Equal(t, uint32(1), j.Attempts)
	tb.clk.Advance(31 * time.Second)
	require.Equal(t, []string{id}, drainIDs(tk))
	j, _, err = tb.e.Fail(id, Failure{Message: "boom again"})
	require.NoError(t, err)
	require.Equal(t, store.Dead, j.Status)
	_, live := tb.e.Job(id)
	require.False(t, live)
	_, _, err = tb.e.Fail(id, Failure{Message: "late"})
	require.Equal(t, NotFound, err.(*Error).Kind)
}

func TestEngine_DeleteInFlightFreesSlot(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ids := tb.enqueueN(t, 2, spec{})
	tk := tb.e.NewTaker(nil, 1)
	require.Equal(t, ids[:1], drainIDs(tk))
	live, _ := tb.e.Delete([]string{ids[0]})
	require.Equal(t, []bool{true}, live)
	require.Equal(t, ids[1:], drainIDs(tk))
	missing, _ := tb.e.Ack([]string{ids[0]})
	require.Equal(t, ids[:1], missing)
}

// The seed's first timeline: 2-second jobs on a while_in_flight budget of 5
// run five at a time.
func TestEngine_SeedWhileInFlightTimeline(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 5, store.WhileInFlight, 0, 0)
	ids := tb.enqueueN(t, 12, spec{binds: bindings("b", 1)})
	tk := tb.e.NewTaker(nil, 0)
	var waves [][]string
	for len(waves) < 3 {
		got := drainIDs(tk)
		waves = append(waves, got)
		tb.clk.Advance(2 * time.Second)
		tb.ack(t, got...)
	}
	require.Equal(t, [][]string{ids[:5], ids[5:10], ids[10:]}, waves)
	st, _ := tb.e.Budget("b", true)
	require.Equal(t, int64(0), st.State.Held)
	require.Equal(t, int64(12), st.State.Dispatched)
}

// The seed's 6/minute timelines, with the default burst and with burst 1.
func TestEngine_SeedTimeBasedTimeline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		burst int64
		want  []time.Duration
	}{
		{"DefaultBurst", 0, []time.Duration{0, 0, 0, 0, 0, 0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second}},
		{"BurstOne", 1, []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second, 40 * time.Second, 50 * time.Second, 60 * time.Second, 70 * time.Second, 80 * time.Second, 90 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := setup(t)
			tb.budget(t, "rate", 6, store.TimeBased, 60000, tc.burst)
			tb.enqueueN(t, 10, spec{binds: bindings("rate", 1)})
			tk := tb.e.NewTaker(nil, 0)
			for i := 0; i < 100; i++ {
				tb.ack(t, drainIDs(tk)...)
				tb.clk.Advance(time.Second)
			}
			var got []time.Duration
			for _, d := range tb.dispatches {
				got = append(got, d.at.Sub(epoch))
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestEngine_ParkedDoNotBlockOthers(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 1, store.WhileInFlight, 0, 0)
	tb.budget(t, "c", 1, store.WhileInFlight, 0, 0)
	b1 := tb.enqueue(t, spec{priority: 1, binds: bindings("b", 1)})
	b2 := tb.enqueue(t, spec{priority: 1, binds: bindings("b", 1)})
	c1 := tb.enqueue(t, spec{priority: 2, binds: bindings("c", 1)})
	free := tb.enqueue(t, spec{priority: 3})
	require.Equal(t, Counts{Ready: 4}, tb.e.Stats().Jobs, "with no worker connected nothing is parked")
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{b1, c1, free}, drainIDs(tk))
	require.Equal(t, Counts{Parked: 1, InFlight: 3}, tb.e.Stats().Jobs, "b2 waits in b's line")
	tb.ack(t, b1)
	require.Equal(t, []string{b2}, drainIDs(tk))
}

func TestEngine_CheapJobNeverPassesParkedExpensiveOne(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 5, store.WhileInFlight, 0, 0)
	tk := tb.e.NewTaker(nil, 0)
	first := tb.enqueue(t, spec{binds: bindings("b", 3)})
	require.Equal(t, []string{first}, drainIDs(tk))
	big := tb.enqueue(t, spec{binds: bindings("b", 5)})
	cheap := tb.enqueue(t, spec{binds: bindings("b", 1)})
	require.Empty(t, drainIDs(tk), "2 tokens are free, but the cheap job waits behind the parked expensive one")
	w, ok := tb.e.Why(cheap)
	require.True(t, ok)
	require.Equal(t, "budget", w.WaitingFor)
	require.Equal(t, int64(1), w.Budgets[0].Ahead)
	tb.ack(t, first)
	require.Equal(t, []string{big}, drainIDs(tk))
	tb.ack(t, big)
	require.Equal(t, []string{cheap}, drainIDs(tk))
}

func TestEngine_HeadWithoutTakerReservesNothing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 2, store.WhileInFlight, 0, 0)
	tkA := tb.e.NewTaker([]string{"a"}, 0)
	hold := tb.enqueue(t, spec{queue: "a", binds: bindings("b", 1)})
	require.Equal(t, []string{hold}, drainIDs(tkA))
	// Earliest waiter is in queue "x" which nobody serves: it must not
	// reserve the budget against queue "a".
	tb.enqueue(t, spec{queue: "x", priority: 1, binds: bindings("b", 2)})
	next := tb.enqueue(t, spec{queue: "a", binds: bindings("b", 1)})
	require.Equal(t, []string{next}, drainIDs(tkA))
}

func TestEngine_MultiBudgetAllOrNothing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "conc", 10, store.WhileInFlight, 0, 0)
	tb.budget(t, "rate", 2, store.TimeBased, 1000, 0)
	tk := tb.e.NewTaker(nil, 0)
	ids := tb.enqueueN(t, 4, spec{binds: bindings("conc", 2, "rate", 1)})
	require.Equal(t, ids[:2], drainIDs(tk))
	st, _ := tb.e.Budget("conc", true)
	require.Equal(t, int64(4), st.State.Held, "only the dispatched jobs hold tokens")
	require.Equal(t, int64(0), st.State.Parked)
	rt, _ := tb.e.Budget("rate", true)
	require.Equal(t, int64(2), rt.State.Parked)
	require.Equal(t, epoch.Add(500*time.Millisecond).UnixMilli(), *rt.State.NextTokenAt)
	tb.clk.Advance(500 * time.Millisecond)
	require.Equal(t, ids[2:3], drainIDs(tk))
}

func TestEngine_ReservationWhileWaitingForWorker(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 1, store.WhileInFlight, 0, 0)
	slow := tb.e.NewTaker([]string{"slow"}, 1)
	fast := tb.e.NewTaker([]string{"fast"}, 0)
	busy := tb.enqueue(t, spec{queue: "slow", priority: 9})
	require.Equal(t, []string{busy}, drainIDs(slow))
	holder := tb.enqueue(t, spec{queue: "fast", binds: bindings("b", 1)})
	require.Equal(t, []string{holder}, drainIDs(fast))
	waiter := tb.enqueue(t, spec{queue: "slow", priority: 1, binds: bindings("b", 1)})
	later := tb.enqueue(t, spec{queue: "fast", priority: 2, binds: bindings("b", 1)})
	tb.ack(t, holder)
	// The budget is free and the slow queue's job heads the line but its
	// worker is busy: it keeps the reservation, the fast queue must wait.
	require.Empty(t, drainIDs(fast))
	w, _ := tb.e.Why(waiter)
	require.Equal(t, "worker", w.WaitingFor)
	tb.ack(t, busy)
	require.Equal(t, []string{waiter}, drainIDs(slow))
	tb.ack(t, waiter)
	require.Equal(t, []string{later}, drainIDs(fast))
}

func TestEngine_BudgetErrors(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "schema-bot", 10, store.WhileInFlight, 0, 0)
	tb.budget(t, "image-service", 10000, store.TimeBased, 3600000, 0)
	_, _, err := tb.e.PutBudget("image-service", store.Budget{Allocation: 1, Strategy: store.WhileInFlight}, CreateOnly)
	require.EqualError(t, err, "budget 'image-service' already exists")
	tb.enqueue(t, spec{binds: bindings("schema-bot", 2, "image-service", 1)})
	_, err = tb.e.DeleteBudget("image-service")
	require.EqualError(t, err, "budget 'image-service' is referenced by 1 unfinished job. Delete them or wait for them to finish before deleting it.")
	_, _, err = tb.e.PatchBudget("schema-bot", func(c *store.Budget) error { c.Allocation = 1; return nil })
	require.EqualError(t, err, "budget 'schema-bot' cannot allocate 1: 1 unfinished job draw up to 2 from it. Raise the allocation, delete them, or wait for them to drain.")
	_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: bindings("schema-bot", 11)}})
	require.EqualError(t, err, "job cost 11 exceeds budget 'schema-bot' allocation 10")
	_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: bindings("missing", 1)}})
	require.EqualError(t, err, "budget 'missing' does not exist")
}

func TestEngine_CreateWithIsAtomicAndFirstWins(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	cw := func(alloc int64) *store.Budget {
		return &store.Budget{Allocation: alloc, Strategy: store.WhileInFlight}
	}
	_, _, err := tb.e.Enqueue([]NewJob{
		{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: []BindingSpec{{Key: "new", Cost: 1, CreateWith: cw(3)}}},
		{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: []BindingSpec{{Key: "new", Cost: 3, CreateWith: cw(100)}}},
		{Type: "t", Queue: "q", Payload: []byte("{}"), Budgets: []BindingSpec{{Key: "new", Cost: 4}}},
	})
	require.EqualError(t, err, "job cost 4 exceeds budget 'new' allocation 3")
	require.Equal(t, 2, err.(*Error).Item)
	require.Empty(t, tb.e.Budgets(false), "nothing is created when the request fails")
	require.Empty(t, tb.e.Stats().Queues)
}

func TestEngine_ConfigChangeTakesEffectAtOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 1, store.WhileInFlight, 0, 0)
	tk := tb.e.NewTaker(nil, 0)
	ids := tb.enqueueN(t, 3, spec{binds: bindings("b", 1)})
	require.Equal(t, ids[:1], drainIDs(tk))
	_, _, err := tb.e.PutBudget("b", store.Budget{Allocation: 3, Strategy: store.WhileInFlight}, CreateOrReplace)
	require.NoError(t, err)
	require.Equal(t, ids[1:], drainIDs(tk))
}

func TestEngine_EnqueuedJobsWaitForAdmit(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tk := tb.e.NewTaker(nil, 0)
	jobs, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("{}")}, {Type: "t", Queue: "q", Payload: []byte("{}")}})
	require.NoError(t, err)
	require.Empty(t, drainIDs(tk), "nothing is dispatched before its commit")
	j, ok := tb.e.Job(jobs[0].ID)
	require.True(t, ok, "but the job is visible")
	require.Equal(t, store.Ready, j.Status)
	tb.e.Delete([]string{jobs[1].ID}) // its commit failed: unwound
	tb.e.Admit([]string{jobs[0].ID, jobs[1].ID})
	require.Equal(t, []string{jobs[0].ID}, drainIDs(tk))
}

func TestEngine_Reset(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 1, store.WhileInFlight, 0, 0)
	tk := tb.e.NewTaker(nil, 0)
	ids := tb.enqueueN(t, 2, spec{binds: bindings("b", 1)})
	require.Equal(t, ids[:1], drainIDs(tk))
	tb.e.Reset()
	require.Equal(t, Counts{}, tb.e.Stats().Jobs)
	require.Empty(t, tb.e.Budgets(false))
	missing, _ := tb.e.Ack(ids[:1])
	require.Equal(t, ids[:1], missing)
	require.Equal(t, 0, tk.InFlight())
}

func TestEngine_PatchMovesJob(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, spec{priority: 5})
	b := tb.enqueue(t, spec{priority: 5})
	_, _, err := tb.e.Patch(b, func(now int64, j *store.Job) error { j.Priority = 1; return nil })
	require.NoError(t, err)
	future := epoch.Add(time.Hour).UnixMilli()
	j, _, err := tb.e.Patch(a, func(now int64, j *store.Job) error { j.ReadyAt = future; return nil })
	require.NoError(t, err)
	require.Equal(t, store.Scheduled, j.Status)
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{b}, drainIDs(tk))
	_, _, err = tb.e.Patch("missing", func(int64, *store.Job) error { return nil })
	require.Equal(t, NotFound, err.(*Error).Kind)
}
