package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// The unique property test drives the engine with random operations on
// jobs with unique keys and checks it, after each, against a model of
// Zizq's own holder index, which shares no code with the engine's: Zizq
// keeps key → holder only while the holder holds (it removes the entry when
// a queued holder is dispatched or any holder finishes, and puts a queued
// job back when it returns to the queue and the key is free). It also
// replays what the engine journals into a fake store and checks that the
// store names one holder per key, the engine's claimant, and that an engine
// rebuilt from that store after a crash finds the same holders.

var uniqueKeys = []string{"a", "b", "c"}

// uModelJob is the model's job.
type uModelJob struct {
	key        string
	while      store.UniqueWhile
	status     store.Status
	keep       bool
	finishedAt int64 // ms
	taker      int
}

type uniqueRun struct {
	t       testing.TB
	seed    uint64
	rng     *rand.Rand
	clk     *clock.Fake
	e       *Engine
	journal *recJournal
	applied int // journal ops replayed into st
	st      fakeStore
	jobs    map[string]*uModelJob
	index   map[string]string // Zizq's: key → holder
	takers  map[int]*Taker
	conns   int
	steps   []string
}

func newUniqueRun(t testing.TB, seed uint64) *uniqueRun {
	r := &uniqueRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x51ed27)), clk: clock.NewFake(epoch),
		journal: &recJournal{}, st: fakeStore{}, jobs: map[string]*uModelJob{}, index: map[string]string{}, takers: map[int]*Taker{}}
	cfg := DefaultConfig()
	cfg.Random = func() float64 { return 0.5 }
	r.e = New(cfg, r.clk, r.journal, jobid.New(r.clk.Now))
	return r
}

func (r *uniqueRun) step(format string, args ...any) {
	r.steps = append(r.steps, fmt.Sprintf(format, args...))
}

func (r *uniqueRun) fail(format string, args ...any) {
	r.t.Helper()
	tail := r.steps[max(0, len(r.steps)-15):]
	r.t.Fatalf("seed %d: %s\nlast operations:\n  %s", r.seed, fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
}

func (r *uniqueRun) nowMs() int64 { return r.clk.Now().UnixMilli() }

// pick returns a random job of the model in one of the statuses, or "".
func (r *uniqueRun) pick(statuses ...store.Status) string {
	var ids []string
	for id, j := range r.jobs {
		if slices.Contains(statuses, j.status) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	slices.Sort(ids)
	return ids[r.rng.IntN(len(ids))]
}

// --- the model of Zizq's index ---------------------------------------------

func (r *uniqueRun) letGo(id string) {
	if j := r.jobs[id]; j != nil && r.index[j.key] == id {
		delete(r.index, j.key)
	}
}

// backInQueue is a queued job's reclaim (Zizq: backoff and recovery; ours:
// disconnect too), or any job's when readmitted.
func (r *uniqueRun) backInQueue(id string, any bool) {
	j := r.jobs[id]
	if _, taken := r.index[j.key]; !taken && (any || j.while == store.UniqueQueued) {
		r.index[j.key] = id
	}
}

func (r *uniqueRun) dispatched(id string, taker int) {
	j := r.jobs[id]
	j.status, j.taker = store.InFlight, taker
	if j.while == store.UniqueQueued {
		r.letGo(id)
	}
}

func (r *uniqueRun) finished(id string, status store.Status) {
	j := r.jobs[id]
	if !j.keep {
		r.letGo(id)
		delete(r.jobs, id)
		return
	}
	j.status, j.finishedAt = status, r.nowMs()
	if j.while != store.UniqueExists {
		r.letGo(id)
	}
}

// --- operations ------------------------------------------------------------

func (r *uniqueRun) enqueue() {
	n := 1 + r.rng.IntN(3)
	specs := make([]uspec, n)
	for i := range specs {
		s := uspec{key: uniqueKeys[r.rng.IntN(len(uniqueKeys))], while: scopes[r.rng.IntN(3)], keep: r.rng.IntN(2) == 0}
		if r.rng.IntN(3) == 0 {
			at := r.nowMs() + int64(1+r.rng.IntN(300))
			s.readyAt = &at
		}
		specs[i] = s
	}
	r.step("enqueue %+v", specs)
	in := make([]NewJob, n)
	for i, s := range specs {
		in[i] = s.newJob()
		if !s.keep {
			in[i].Retention = &store.Retention{CompletedMs: new(uint64), DeadMs: new(uint64)}
		}
	}
	out, _, err := r.e.Enqueue(in)
	if err != nil {
		r.fail("enqueue: %v", err)
	}
	var created []string
	for i, s := range specs {
		if h, ok := r.index[s.key]; ok && s.while.Covers(r.jobs[h].status) {
			if !out[i].Duplicate || out[i].ID != h {
				r.fail("item %d: engine %+v, model: a duplicate of %s", i, out[i], h)
			}
			continue
		}
		if out[i].Duplicate {
			r.fail("item %d: engine: a duplicate of %s, model: new", i, out[i].ID)
		}
		status := store.Ready
		if s.readyAt != nil {
			status = store.Scheduled
		}
		r.jobs[out[i].ID] = &uModelJob{key: s.key, while: s.while, status: status, keep: s.keep}
		r.index[s.key] = out[i].ID
		created = append(created, out[i].ID)
	}
	r.e.Admit(created)
}

func (r *uniqueRun) connect() {
	r.conns++
	r.takers[r.conns] = r.e.NewTaker(nil, 1+r.rng.IntN(3))
	r.step("connect %d", r.conns)
}

func (r *uniqueRun) disconnect() {
	var conns []int
	for c := range r.takers {
		conns = append(conns, c)
	}
	if len(conns) == 0 {
		return
	}
	slices.Sort(conns)
	c := conns[r.rng.IntN(len(conns))]
	r.step("disconnect %d", c)
	r.takers[c].Close()
	delete(r.takers, c)
	var held []string
	for id, j := range r.jobs {
		if j.status == store.InFlight && j.taker == c {
			held = append(held, id)
		}
	}
	slices.Sort(held) // the engine requeues them in ID order
	for _, id := range held {
		r.jobs[id].status = store.Ready
		r.backInQueue(id, false)
	}
}

func (r *uniqueRun) ack() {
	id := r.pick(store.InFlight)
	if id == "" {
		return
	}
	r.step("ack %s", id)
	if missing, _ := r.e.Ack([]string{id}); len(missing) > 0 {
		r.fail("ack %s: not in flight", id)
	}
	r.finished(id, store.Completed)
}

func (r *uniqueRun) failJob() {
	id := r.pick(store.InFlight)
	if id == "" {
		return
	}
	kill := r.rng.IntN(3) == 0
	at := r.nowMs() + int64(r.rng.IntN(2)*(1+r.rng.IntN(200)))
	r.step("fail %s kill=%v retry_at=%d", id, kill, at)
	if _, _, err := r.e.Fail(id, Failure{Kill: kill, RetryAt: &at}); err != nil {
		r.fail("fail %s: %v", id, err)
	}
	if kill {
		r.finished(id, store.Dead)
		return
	}
	r.jobs[id].status = store.Ready
	if at > r.nowMs() {
		r.jobs[id].status = store.Scheduled
	}
	r.backInQueue(id, false)
}

func (r *uniqueRun) remove() {
	id := r.pick(store.Scheduled, store.Ready, store.InFlight, store.Completed, store.Dead)
	if id == "" {
		return
	}
	r.step("delete %s", id)
	r.e.Delete([]string{id})
	r.letGo(id)
	delete(r.jobs, id)
}

func (r *uniqueRun) patch() {
	id := r.pick(store.Scheduled, store.Ready)
	if id == "" {
		return
	}
	at := r.nowMs() + int64(r.rng.IntN(2)*(1+r.rng.IntN(200)))
	r.step("patch %s ready_at=%d", id, at)
	if _, _, err := r.e.Patch(id, func(_ int64, j *store.Job) error { j.ReadyAt = at; return nil }); err != nil {
		r.fail("patch %s: %v", id, err)
	}
	r.jobs[id].status = store.Ready
	if at > r.nowMs() {
		r.jobs[id].status = store.Scheduled
	}
}

func (r *uniqueRun) readmit() {
	id := r.pick(store.Dead)
	if id == "" {
		return
	}
	j := r.jobs[id]
	r.step("readmit %s", id)
	hour := uint64(time.Hour / time.Millisecond)
	dead := store.Job{ID: id, Type: "t", Queue: "q", Priority: 1, Status: store.Dead, PurgeAt: j.finishedAt + int64(hour),
		UniqueKey: j.key, UniqueWhile: j.while, Retention: &store.Retention{CompletedMs: &hour, DeadMs: &hour}}
	if _, _, err := r.e.Readmit(dead); err != nil {
		r.fail("readmit %s: %v", id, err)
	}
	j.status = store.Ready
	r.backInQueue(id, true)
}

func (r *uniqueRun) advance() {
	d := time.Duration(1+r.rng.IntN(150)) * time.Millisecond
	if r.rng.IntN(15) == 0 {
		d = time.Hour
	}
	r.step("advance %v", d)
	r.clk.Advance(d)
	for id, j := range r.jobs {
		if !j.status.Live() && j.finishedAt+int64(time.Hour/time.Millisecond) <= r.nowMs() {
			r.letGo(id)
			delete(r.jobs, id)
		}
	}
	for id, j := range r.jobs { // promotions
		if j.status == store.Scheduled {
			if v, ok := r.e.Job(id); ok && v.Status == store.Ready {
				j.status = store.Ready
			}
		}
	}
}

// observe applies the dispatches the last operation made.
func (r *uniqueRun) observe() {
	for c, tk := range r.takers {
		for _, f := range tk.Drain(nil) {
			if r.jobs[f.ID] == nil {
				r.fail("dispatched %s, unknown to the model", f.ID)
			}
			r.dispatched(f.ID, c)
		}
	}
}

// --- checks ----------------------------------------------------------------

func (r *uniqueRun) compare() {
	r.t.Helper()
	for _, key := range uniqueKeys {
		got, _ := r.e.UniqueHolder(key)
		if want := r.index[key]; got != want {
			r.fail("holder of %q: engine %q, Zizq's index %q", key, got, want)
		}
	}
	for id, j := range r.jobs {
		if v, ok := r.e.Job(id); j.status.Live() && (!ok || v.Status != j.status) {
			r.fail("job %s: engine %v %v, model %v", id, ok, v.Status, j.status)
		}
	}
	r.replay()
	r.e.mu.Lock()
	claims := maps(r.e.unique.claims)
	r.e.mu.Unlock()
	if got := r.st.holders(r.t); fmt.Sprint(got) != fmt.Sprint(claims) {
		r.fail("holders in the store %v, the engine's claimants %v", got, claims)
	}
}

func maps(claims map[string]jobid.ID) map[string]string {
	out := map[string]string{}
	for k, id := range claims {
		out[k] = id.String()
	}
	return out
}

func (r *uniqueRun) replay() {
	r.journal.mu.Lock()
	ops := r.journal.ops[r.applied:]
	r.applied = len(r.journal.ops)
	r.journal.mu.Unlock()
	for _, o := range ops {
		r.st.apply(o)
	}
}

// crash rebuilds an engine from the fake store as the server does after a
// kill: every key held by the store's holder, else by the first queued job
// (by ID) left in flight with that key (Zizq's recovery), and the store
// told of those claims.
func (r *uniqueRun) crash() {
	r.replay()
	want := r.st.holders(r.t)
	var ids []string
	for id := range r.st {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		row := r.st[id]
		if _, held := want[row.key]; row.key != "" && !held && row.status == store.InFlight && row.while == store.UniqueQueued {
			want[row.key] = id
		}
	}
	journal := &recJournal{}
	e := New(DefaultConfig(), r.clk, journal, jobid.New(r.clk.Now))
	rs := e.Restore()
	for id, row := range r.st {
		if row.status.Live() {
			if err := rs.Job(store.LiveJob{ID: id, Queue: "q", Type: "t", Priority: 1, Status: row.status}); err != nil {
				r.fail("restore %s: %v", id, err)
			}
		}
	}
	for id, row := range r.st {
		if row.key != "" && (row.status.Live() || row.holds) {
			rs.Unique(store.UniqueJob{ID: id, Key: row.key, While: row.while, Status: row.status, Holds: row.holds})
		}
	}
	rs.Finish()
	for _, key := range uniqueKeys {
		if got, _ := e.UniqueHolder(key); got != want[key] {
			r.fail("after a crash, holder of %q: %q, want %q", key, got, want[key])
		}
	}
	for _, o := range journal.ops {
		r.st.apply(o)
	}
	if got := r.st.holders(r.t); fmt.Sprint(got) != fmt.Sprint(want) {
		r.fail("after a crash, holders in the store %v, want %v", got, want)
	}
}

// fakeStore is what the journal leaves behind, as store.InsertJob and the
// other ops define it, for the unique keys.
type fakeStore map[string]*fakeRow

type fakeRow struct {
	status store.Status
	key    string
	while  store.UniqueWhile
	holds  bool
}

func (s fakeStore) take(id string) {
	row := s[id]
	for _, other := range s {
		if other != row && other.key == row.key {
			other.holds = false
		}
	}
	row.holds = true
}

func (s fakeStore) apply(o store.Op) {
	switch o := o.(type) {
	case store.InsertJobOp:
		s[o.Job.ID] = &fakeRow{status: o.Job.Status, key: o.Job.UniqueKey, while: o.Job.UniqueWhile}
		if o.Job.UniqueKey != "" {
			s.take(o.Job.ID)
		}
	case store.SetStatusOp:
		if row := s[o.ID]; row != nil {
			row.status = o.Status
		}
	case store.RetryOp:
		if row := s[o.ID]; row != nil {
			row.status = o.Status
		}
	case store.FinishOp:
		if row := s[o.ID]; row != nil {
			row.status = o.Status
		}
	case store.PatchJobOp:
		if row := s[o.Patch.ID]; row != nil {
			row.status = o.Patch.Status
		}
	case store.UniqueHolderOp:
		if row := s[o.ID]; row != nil && row.key != "" {
			if o.Holds {
				s.take(o.ID)
			} else {
				row.holds = false
			}
		}
	case store.DeleteJobOp:
		delete(s, o.ID)
	case store.DeleteEverythingOp:
		clear(s)
	}
}

func (s fakeStore) holders(t testing.TB) map[string]string {
	out := map[string]string{}
	for id, row := range s {
		if row.holds {
			if prev, dup := out[row.key]; dup {
				t.Fatalf("key %q has two holders in the store: %s and %s", row.key, prev, id)
			}
			out[row.key] = id
		}
	}
	return out
}

func (r *uniqueRun) run(n int) {
	ops := []struct {
		weight int
		do     func()
	}{
		{10, r.enqueue}, {2, r.connect}, {2, r.disconnect}, {5, r.ack}, {4, r.failJob},
		{2, r.remove}, {2, r.patch}, {2, r.readmit}, {5, r.advance},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	for range n {
		k := r.rng.IntN(total)
		for _, o := range ops {
			if k < o.weight {
				o.do()
				break
			}
			k -= o.weight
		}
		r.observe()
		r.compare()
	}
	r.crash()
}

func TestEngine_UniqueMatchesZizqIndex(t *testing.T) {
	t.Parallel()
	seeds := 1000
	if testing.Short() {
		seeds = 100
	}
	for seed := range seeds {
		newUniqueRun(t, uint64(seed)).run(120)
	}
}
