package engine

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// The property test drives the engine with random operations on a fake
// clock and checks ENGINE.md's invariants after every step against an
// oracle that keeps its own books: which jobs are in flight where, and each
// budget's tokens as exact rationals replayed from the dispatch history. It
// never asks the engine's arithmetic what the answer should be.

type oBudget struct {
	cfg  store.Budget
	held int64 // while_in_flight: cost of in-flight jobs
	// time_based: exact level in tokens at time `at` (ns)
	level *big.Rat
	at    int64
	// dispatches since the last configuration change, for window checks
	history []oDispatch
}

type oDispatch struct {
	ns   int64
	cost int64
}

type oJob struct {
	id       string
	queue    string
	priority uint16
	binds    map[string]int64
	readyAt  int64 // ms
	taker    *oTaker
}

type oTaker struct {
	t        *Taker
	queues   map[string]bool // nil: all
	prefetch int
	held     map[string]bool
}

type oracle struct {
	t          *testing.T
	rng        *rand.Rand
	clk        *clock.Fake
	e          *Engine
	budgets    map[string]*oBudget
	jobs       map[string]*oJob
	takers     []*oTaker
	dispatched []dispatch
	limit      int
}

var queues = []string{"a", "b", "c"}

func newOracle(t *testing.T, seed uint64) *oracle {
	o := &oracle{
		t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		clk: clock.NewFake(epoch), budgets: map[string]*oBudget{}, jobs: map[string]*oJob{},
	}
	cfg := DefaultConfig()
	cfg.Random = func() float64 { return 0 }
	o.limit = []int{0, 0, 3, 6}[o.rng.IntN(4)]
	cfg.GlobalInFlightLimit = o.limit
	cfg.OnDispatch = func(j store.Job, at time.Time, _ int64) {
		o.dispatched = append(o.dispatched, dispatch{id: j.ID, at: at})
	}
	o.e = New(cfg, o.clk, &recJournal{}, jobid.New(o.clk.Now))
	o.makeBudgets()
	return o
}

func (o *oracle) ns() int64 { return o.clk.Now().UnixNano() }

func (o *oracle) makeBudgets() {
	n := 1 + o.rng.IntN(3)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("b%d", i)
		cfg := store.Budget{Allocation: int64(1 + o.rng.IntN(4)), Strategy: store.WhileInFlight}
		if o.rng.IntN(2) == 0 {
			cfg.Strategy = store.TimeBased
			cfg.DurationMs = int64([]int{700, 1000, 3000}[o.rng.IntN(3)])
			if o.rng.IntN(3) == 0 {
				cfg.Burst = int64(1 + o.rng.IntN(5))
			}
		}
		_, _, err := o.e.PutBudget(key, cfg, CreateOnly)
		require.NoError(o.t, err)
		cfg.Key = key
		ob := &oBudget{cfg: cfg, at: o.ns()}
		ob.level = new(big.Rat).SetInt64(capacityOf(cfg))
		o.budgets[key] = ob
	}
}

func capacityOf(cfg store.Budget) int64 {
	if cfg.Strategy == store.TimeBased && cfg.Burst > 0 {
		return cfg.Burst
	}
	return cfg.Allocation
}

// levelAt is the oracle's exact token level of a time_based budget at ns.
func (b *oBudget) levelAt(ns int64) *big.Rat {
	if ns <= b.at {
		return new(big.Rat).Set(b.level)
	}
	gain := new(big.Rat).SetFrac(
		new(big.Int).Mul(big.NewInt(b.cfg.Allocation), big.NewInt(ns-b.at)),
		new(big.Int).Mul(big.NewInt(b.cfg.DurationMs), big.NewInt(int64(time.Millisecond))))
	lvl := new(big.Rat).Add(b.level, gain)
	if c := new(big.Rat).SetInt64(capacityOf(b.cfg)); lvl.Cmp(c) > 0 {
		lvl = c
	}
	return lvl
}

func (b *oBudget) advance(ns int64) {
	if ns > b.at {
		b.level, b.at = b.levelAt(ns), ns
	}
}

// avail is what the budget could pay now, by the oracle's books.
func (o *oracle) avail(b *oBudget) *big.Rat {
	if b.cfg.Strategy == store.WhileInFlight {
		return new(big.Rat).SetInt64(b.cfg.Allocation - b.held)
	}
	return b.levelAt(o.ns())
}

// debit books one dispatch against a budget and checks it could be paid,
// and that no window of the history exceeds capacity + rate·window.
func (o *oracle) debit(key string, cost int64, ns int64, id string) {
	b := o.budgets[key]
	if b.cfg.Strategy == store.WhileInFlight {
		require.LessOrEqual(o.t, b.held+cost, b.cfg.Allocation, "over-issued %s dispatching %s", key, id)
		b.held += cost
		return
	}
	b.advance(ns)
	require.True(o.t, b.level.Cmp(new(big.Rat).SetInt64(cost)) >= 0, "over-issued %s: level %s < cost %d for %s", key, b.level.FloatString(6), cost, id)
	b.level.Sub(b.level, new(big.Rat).SetInt64(cost))
	b.history = append(b.history, oDispatch{ns: ns, cost: cost})
	var sum int64
	capUnits := new(big.Int).Mul(big.NewInt(capacityOf(b.cfg)), big.NewInt(b.cfg.DurationMs*int64(time.Millisecond)))
	for i := len(b.history) - 1; i >= 0; i-- {
		sum += b.history[i].cost
		w := ns - b.history[i].ns
		// sum·D ≤ C·D + A·W (all in ns units)
		lhs := new(big.Int).Mul(big.NewInt(sum), big.NewInt(b.cfg.DurationMs*int64(time.Millisecond)))
		rhs := new(big.Int).Add(capUnits, new(big.Int).Mul(big.NewInt(b.cfg.Allocation), big.NewInt(w)))
		require.True(o.t, lhs.Cmp(rhs) <= 0, "%s dispatched %d over a window of %s", key, sum, time.Duration(w))
	}
}

func (o *oracle) release(j *oJob) {
	for key, cost := range j.binds {
		if b := o.budgets[key]; b.cfg.Strategy == store.WhileInFlight {
			b.held -= cost
		}
	}
	delete(j.taker.held, j.id)
	j.taker = nil
}

// absorb attributes new dispatches to the takers that drained them.
func (o *oracle) absorb() {
	events := o.dispatched
	o.dispatched = nil
	got := map[string]*oTaker{}
	for _, ot := range o.takers {
		for _, sj := range ot.t.Drain(nil) {
			got[sj.ID] = ot
		}
	}
	require.Len(o.t, got, len(events), "every dispatch reaches exactly one taker")
	for _, d := range events {
		j := o.jobs[d.id]
		require.NotNil(o.t, j, "dispatched unknown job %s", d.id)
		require.Nil(o.t, j.taker, "job %s dispatched twice", d.id)
		require.LessOrEqual(o.t, j.readyAt, d.at.UnixMilli(), "job %s dispatched before ready_at", d.id)
		ot := got[d.id]
		require.NotNil(o.t, ot)
		require.True(o.t, ot.queues == nil || ot.queues[j.queue], "job %s of queue %s sent to a taker not serving it", d.id, j.queue)
		keys := make([]string, 0, len(j.binds))
		for k := range j.binds {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			o.debit(k, j.binds[k], d.at.UnixNano(), d.id)
		}
		j.taker = ot
		ot.held[d.id] = true
		if ot.prefetch > 0 {
			require.LessOrEqual(o.t, len(ot.held), ot.prefetch, "prefetch exceeded")
		}
	}
	if o.limit > 0 {
		require.LessOrEqual(o.t, o.inFlight(), o.limit, "global in-flight limit exceeded")
	}
}

func (o *oracle) inFlight() int {
	n := 0
	for _, j := range o.jobs {
		if j.taker != nil {
			n++
		}
	}
	return n
}

func (o *oracle) waiting(j *oJob) bool {
	return j.taker == nil && j.readyAt <= o.clk.Now().UnixMilli()
}

// --- operations ---

func (o *oracle) enqueue() {
	q := queues[o.rng.IntN(len(queues))]
	prio := uint16(1 + o.rng.IntN(3))
	nj := NewJob{Type: "t", Queue: q, Priority: prio, Payload: []byte("{}")}
	binds := map[string]int64{}
	for _, key := range o.budgetKeys() {
		b := o.budgets[key]
		if o.rng.IntN(3) == 0 {
			cost := int64(1 + o.rng.IntN(int(maxCost(b.cfg))))
			nj.Budgets = append(nj.Budgets, BindingSpec{Key: key, Cost: cost})
			binds[key] = cost
		}
	}
	readyAt := o.clk.Now().UnixMilli()
	if o.rng.IntN(5) == 0 {
		readyAt += int64(o.rng.IntN(3000))
		nj.ReadyAt = &readyAt
	}
	jobs, _, err := o.e.Enqueue([]NewJob{nj})
	require.NoError(o.t, err)
	o.e.Admit([]string{jobs[0].ID})
	o.jobs[jobs[0].ID] = &oJob{id: jobs[0].ID, queue: q, priority: prio, binds: binds, readyAt: readyAt}
}

func (o *oracle) connect() {
	ot := &oTaker{prefetch: o.rng.IntN(4), held: map[string]bool{}}
	var names []string
	if o.rng.IntN(2) == 0 {
		ot.queues = map[string]bool{}
		for _, q := range queues {
			if o.rng.IntN(2) == 0 {
				ot.queues[q] = true
				names = append(names, q)
			}
		}
		if len(names) == 0 {
			ot.queues[queues[0]] = true
			names = append(names, queues[0])
		}
	}
	ot.t = o.e.NewTaker(names, ot.prefetch)
	o.takers = append(o.takers, ot)
}

func (o *oracle) disconnect() {
	if len(o.takers) == 0 {
		return
	}
	i := o.rng.IntN(len(o.takers))
	ot := o.takers[i]
	o.absorb() // frames it was sent are its own
	o.takers = append(o.takers[:i], o.takers[i+1:]...)
	for id := range ot.held {
		o.release(o.jobs[id])
	}
	ot.t.Close()
}

func (o *oracle) randomHeld() *oJob {
	var held []*oJob
	for _, j := range o.jobs {
		if j.taker != nil {
			held = append(held, j)
		}
	}
	if len(held) == 0 {
		return nil
	}
	sort.Slice(held, func(a, b int) bool { return held[a].id < held[b].id })
	return held[o.rng.IntN(len(held))]
}

func (o *oracle) ack() {
	if j := o.randomHeld(); j != nil {
		o.release(j)
		delete(o.jobs, j.id)
		missing, _ := o.e.Ack([]string{j.id})
		require.Empty(o.t, missing)
	}
}

func (o *oracle) fail() {
	j := o.randomHeld()
	if j == nil {
		return
	}
	o.release(j)
	kill := o.rng.IntN(4) == 0
	at := o.clk.Now().UnixMilli() + int64(o.rng.IntN(2000))
	sj, _, err := o.e.Fail(j.id, Failure{Message: "x", Kill: kill, RetryAt: &at})
	require.NoError(o.t, err)
	if kill {
		require.Equal(o.t, store.Dead, sj.Status)
		delete(o.jobs, j.id)
		return
	}
	j.readyAt = at
}

func (o *oracle) delete() {
	ids := make([]string, 0, len(o.jobs))
	for id := range o.jobs {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return
	}
	sort.Strings(ids)
	j := o.jobs[ids[o.rng.IntN(len(ids))]]
	if j.taker != nil {
		o.release(j)
	}
	delete(o.jobs, j.id)
	live, _ := o.e.Delete([]string{j.id})
	require.Equal(o.t, []bool{true}, live)
}

func (o *oracle) budgetKeys() []string {
	keys := make([]string, 0, len(o.budgets))
	for k := range o.budgets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (o *oracle) reconfigure() {
	keys := o.budgetKeys()
	b := o.budgets[keys[o.rng.IntN(len(keys))]]
	next := b.cfg
	next.Allocation = int64(1 + o.rng.IntN(5))
	if next.Strategy == store.TimeBased && o.rng.IntN(2) == 0 {
		next.Burst = int64(o.rng.IntN(5)) // 0 clears it
	}
	_, _, err := o.e.PutBudget(b.cfg.Key, next, CreateOrReplace)
	if err != nil {
		return // refused: a bound job costs more than it would allow
	}
	ns := o.ns()
	if b.cfg.Strategy == store.TimeBased {
		b.advance(ns)
		if c := new(big.Rat).SetInt64(capacityOf(next)); b.level.Cmp(c) > 0 {
			b.level = c
		}
	}
	b.cfg = next
	b.history = nil // window bounds restart with the new configuration
}

func (o *oracle) advance() {
	d := time.Duration(o.rng.IntN(1500)) * time.Millisecond
	if o.rng.IntN(3) == 0 {
		d = time.Duration(o.rng.IntN(50)) * time.Microsecond * 37
	}
	o.clk.Advance(d)
}

// --- invariants ---

// check runs every invariant against the oracle's books.
func (o *oracle) check(step int) {
	o.absorb()
	o.checkStructure()
	o.checkCounts()
	o.checkWorkConserving(step)
	for key, b := range o.budgets {
		if b.cfg.Strategy == store.WhileInFlight {
			a := o.e.accounts[key]
			require.Equal(o.t, b.held, a.pool.Held(), "held tokens of %s", key)
		}
	}
}

// checkStructure: every live job is in exactly one state, and the
// structures agree with it (white-box).
func (o *oracle) checkStructure() {
	e := o.e
	require.Equal(o.t, len(o.jobs), len(e.jobs), "live jobs")
	inLines := map[*job]int{}
	for _, a := range e.accounts {
		perQueue := map[*queue]int{}
		a.line.Ascend(func(j *job) bool { inLines[j]++; perQueue[j.q]++; return true })
		require.Equal(o.t, perQueue, a.lineQueues, "line members per queue of %s", a.cfg.Key)
		var all, served int64
		for j := range a.bound {
			if j.state == stReady {
				c := j.bindOf(a).cost
				all += c
				if e.served(j.q) {
					served += c
				}
			}
		}
		require.Equal(o.t, all, a.claimAll, "claims of %s", a.cfg.Key)
		require.Equal(o.t, served, a.claimServed, "served claims of %s", a.cfg.Key)
	}
	for id, j := range e.jobs {
		oj := o.jobs[id]
		require.NotNil(o.t, oj)
		inReady := j.hidx[slotQueue] >= 0
		require.Equal(o.t, inReady, j.hidx[slotGlobal] >= 0)
		switch j.state {
		case stScheduled:
			require.False(o.t, inReady)
			require.Zero(o.t, inLines[j])
			require.NotNil(o.t, j.dl)
		case stReady:
			require.True(o.t, inReady)
			require.Zero(o.t, inLines[j], "a ready job is in no line")
		case stParked:
			require.False(o.t, inReady)
			require.Positive(o.t, inLines[j], "a parked job waits in a line")
			require.True(o.t, o.parkedForAReason(j), "job %s is parked but no budget refuses it", id)
		case stInFlight:
			require.False(o.t, inReady)
			require.Zero(o.t, inLines[j])
			require.NotNil(o.t, oj.taker)
			require.Equal(o.t, oj.taker.t, j.taker)
		default:
			o.t.Fatalf("job %s in state %d", id, j.state)
		}
		require.Equal(o.t, j.state == stInFlight, oj.taker != nil, "in flight per oracle: %s", id)
	}
}

// parkedForAReason: some line the job waits in refuses it now, or (for a
// queue no taker serves) an earlier job of the same kind waits in that line:
// such jobs leave their lines in order.
func (o *oracle) parkedForAReason(j *job) bool {
	e := o.e
	ns := o.ns()
	for _, b := range j.binds {
		if !b.inLine {
			continue
		}
		if !e.canPay(b.a, j, b.cost, ns) {
			return true
		}
		if e.served(j.q) {
			continue
		}
		earlier := false
		b.a.line.Ascend(func(h *job) bool {
			if !before(h, j) {
				return false
			}
			earlier = earlier || !e.served(h.q)
			return !earlier
		})
		if earlier {
			return true
		}
	}
	return false
}

func (o *oracle) checkCounts() {
	var want Counts
	for _, j := range o.jobs {
		switch {
		case j.taker != nil:
			want.InFlight++
		case j.readyAt > o.clk.Now().UnixMilli():
			want.Scheduled++
		}
	}
	got := o.e.Stats().Jobs
	require.Equal(o.t, want.InFlight, got.InFlight)
	require.Equal(o.t, want.Scheduled, got.Scheduled)
	require.Equal(o.t, int64(len(o.jobs))-want.InFlight-want.Scheduled, got.Ready+got.Parked)
}

// checkWorkConserving: a taker with room never idles while a job of its
// queues is plainly affordable. "Plainly" is judged by the oracle alone: a
// job is free when every budget it touches, and every budget of every job
// waiting on those budgets, could pay for all the jobs waiting on it.
func (o *oracle) checkWorkConserving(step int) {
	if o.limit > 0 && o.inFlight() >= o.limit {
		return
	}
	waitCost := map[string]int64{}
	var waiting []*oJob
	for _, j := range o.jobs {
		if o.waiting(j) {
			waiting = append(waiting, j)
			for k, c := range j.binds {
				waitCost[k] += c
			}
		}
	}
	unconstrained := map[string]bool{}
	for k, b := range o.budgets {
		unconstrained[k] = o.avail(b).Cmp(new(big.Rat).SetInt64(waitCost[k])) >= 0
	}
	community := map[string]bool{} // budgets all of whose waiting jobs are payable
	for k := range o.budgets {
		community[k] = unconstrained[k]
	}
	for _, j := range waiting {
		all := true
		for k := range j.binds {
			all = all && unconstrained[k]
		}
		if !all {
			for k := range j.binds {
				community[k] = false
			}
		}
	}
	for _, ot := range o.takers {
		if !ot.t.hasRoom() {
			continue
		}
		for _, j := range waiting {
			if ot.queues != nil && !ot.queues[j.queue] {
				continue
			}
			free := true
			for k := range j.binds {
				free = free && community[k]
			}
			require.False(o.t, free, "step %d: taker with room idles while job %s (queue %s, binds %v) is affordable", step, j.id, j.queue, j.binds)
		}
	}
}

// drainAll is the liveness check: one taker of every queue acking all it
// gets must finish every job in bounded (fake) time: nobody starves.
func (o *oracle) drainAll() {
	for len(o.takers) > 0 {
		o.disconnect()
	}
	o.check(-1)
	ot := &oTaker{prefetch: 0, held: map[string]bool{}}
	ot.t = o.e.NewTaker(nil, 0)
	o.takers = append(o.takers, ot)
	for i := 0; i < 2000 && len(o.jobs) > 0; i++ {
		o.check(-1)
		for id := range ot.held {
			o.release(o.jobs[id])
			delete(o.jobs, id)
			missing, _ := o.e.Ack([]string{id})
			require.Empty(o.t, missing)
		}
		o.clk.Advance(250 * time.Millisecond)
	}
	o.check(-1)
	require.Empty(o.t, o.jobs, "jobs starved")
	require.Empty(o.t, o.e.jobs)
}

// dump prints the engine's view when a property fails.
func (o *oracle) dump() {
	for _, k := range o.budgetKeys() {
		b, a := o.budgets[k], o.e.accounts[k]
		o.t.Logf("%s cfg=%+v oracle held=%d avail=%s | engine avail=%.4f %v deadline=%v",
			k, b.cfg, b.held, o.avail(b).FloatString(4), a.pool.Available(o.ns()), a, a.dl != nil)
		a.line.Ascend(func(j *job) bool {
			o.t.Logf("   line %s q=%s prio=%d state=%d binds=%v", j.ID, j.Queue, j.Priority, j.state, j.Budgets)
			return true
		})
	}
	for _, j := range o.e.jobs {
		o.t.Logf("job %s q=%s prio=%d state=%d binds=%v", j.ID, j.Queue, j.Priority, j.state, j.Budgets)
	}
	for _, ot := range o.takers {
		o.t.Logf("taker queues=%v prefetch=%d held=%d room=%v", ot.queues, ot.prefetch, len(ot.held), ot.t.hasRoom())
	}
}

func runProperty(t *testing.T, seed uint64, steps int) {
	o := newOracle(t, seed)
	t.Cleanup(func() {
		if t.Failed() {
			o.dump()
		}
	})
	ops := []struct {
		weight int
		f      func()
	}{
		{30, o.enqueue}, {6, o.connect}, {4, o.disconnect}, {20, o.ack}, {6, o.fail},
		{4, o.delete}, {3, o.reconfigure}, {25, o.advance},
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	for step := 0; step < steps; step++ {
		n := o.rng.IntN(total)
		for _, op := range ops {
			if n < op.weight {
				op.f()
				break
			}
			n -= op.weight
		}
		o.check(step)
	}
	o.drainAll()
}

func TestEngine_Properties(t *testing.T) {
	t.Parallel()
	seeds, steps := 300, 250
	if testing.Short() {
		seeds, steps = 40, 150
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runProperty(t, seed, steps) })
	}
}
