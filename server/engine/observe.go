package engine

import (
	"slices"

	"github.com/zizq/zizq/server/jobid"
)

// The change feed of the live lists, for dashboards (the admin port's
// /events). It must never slow dispatch, so the engine's side of it is
// counters and one ring, bumped inside operations:
//
//   - a generation per list (scheduled, waiting, in flight), bumped by
//     every state change in or out of it, one for changes of a live job's
//     fields (patches, bindings) and one for budgets;
//   - a bounded ring of finished jobs (completed, or failed: Zizq says
//     "dead" for every failure, retried or not), overwritten when full;
//   - a channel of capacity 1 that the end of an operation pokes, without
//     ever waiting, when a counter moved.
//
// Readers pull: they compare generations with their Cursor and read
// windows (windows.go) under the lock, in work bounded by the window.
// While anyone watches, the in-flight and scheduled jobs are also kept in
// ordered sets (by dequeued_at, by ready_at) so that windows of those lists
// are found by position; nobody watching, they cost nothing.

// List names one of the lists a dashboard shows.
type List uint8

const (
	// ListReady holds the waiting jobs, ready or parked, in dispatch order.
	ListReady List = iota
	// ListInFlight holds the jobs in flight, by dequeued_at.
	ListInFlight
	// ListScheduled holds the scheduled jobs, by ready_at.
	ListScheduled
	// NumLists is the number of lists.
	NumLists
)

// finishRing is how many finished jobs the feed remembers: far more than
// finish between two reads of a reader that keeps up (it reads every
// ~100 ms); one that falls further behind resyncs.
const finishRing = 1 << 15

// Finished is a job that left the live lists by finishing.
type Finished struct {
	ID jobid.ID
	// Dead: it failed (and was retried or died); else it completed.
	Dead bool
}

// Cursor is how far a reader has read the feed. The zero value has read
// nothing.
type Cursor struct {
	gens     [numStates]uint64
	patches  uint64
	budgets  uint64
	finished uint64
}

// Changes says what moved since a cursor.
type Changes struct {
	Lists   [NumLists]bool
	Patched bool // a live job's fields changed (not only its list)
	Budgets bool
	// Finished holds the jobs finished since the cursor; Lost says some
	// were overwritten before they were read.
	Finished []Finished
	Lost     bool
}

// Any reports whether anything moved.
func (c Changes) Any() bool {
	return c.Lists != [NumLists]bool{} || c.Patched || c.Budgets || len(c.Finished) > 0 || c.Lost
}

// observer is the engine's side of the feed.
type observer struct {
	watchers int
	gens     [numStates]uint64
	patches  uint64
	budgets  uint64
	ring     []Finished // nil while nobody watches
	finished uint64     // jobs ever put in the ring
	wake     chan struct{}
	poked    uint64 // sum of the counters at the last poke

	flights timedIndex // in flight, by (dequeued_at ms, id)
	sched   timedIndex // scheduled, by (ready_at ns, id)
}

func (o *observer) moved(old, s jobState) {
	o.gens[old]++
	o.gens[s]++
}

func (o *observer) finish(id jobid.ID, dead bool) {
	if o.ring == nil {
		return
	}
	o.ring[o.finished%finishRing] = Finished{ID: id, Dead: dead}
	o.finished++
}

// poke wakes the reader when a counter moved since the last poke; it never
// waits.
func (o *observer) poke() {
	if o.watchers == 0 {
		return
	}
	sum := o.patches + o.budgets + o.finished
	for _, g := range o.gens {
		sum += g
	}
	if sum == o.poked {
		return
	}
	o.poked = sum
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Watch starts the feed and returns the channel it pokes; call stop once
// the watch ends. Watches may overlap; the ordered sets of the in-flight
// and scheduled jobs exist while at least one does. The first watch builds
// them with the lock released for the sort, so a large backlog does not
// hold dispatch back.
func (e *Engine) Watch() (wake <-chan struct{}, stop func()) {
	e.mu.Lock()
	o := &e.obs
	if o.watchers++; o.watchers > 1 {
		defer e.mu.Unlock()
		return o.wake, e.unwatch
	}
	o.wake = make(chan struct{}, 1)
	o.ring = make([]Finished, finishRing)
	flights := o.flights.begin(e.flightEntries())
	sched := o.sched.begin(e.schedEntries())
	e.mu.Unlock()

	flights, sched = sortTimed(flights), sortTimed(sched)

	e.mu.Lock()
	defer e.mu.Unlock()
	o.flights.finish(flights)
	o.sched.finish(sched)
	return o.wake, e.unwatch
}

func (e *Engine) unwatch() {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := &e.obs
	if o.watchers--; o.watchers > 0 {
		return
	}
	o.ring, o.wake = nil, nil
	o.flights = timedIndex{}
	o.sched = timedIndex{}
}

// Changes returns what moved since c and advances c. Finished jobs are
// appended to buf (reused by the caller).
func (e *Engine) Changes(c *Cursor, buf []Finished) Changes {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	o := &e.obs
	ch := Changes{Finished: buf[:0]}
	lists := [NumLists]jobState{ListReady: stWaiting, ListInFlight: stInFlight, ListScheduled: stScheduled}
	for l, s := range lists {
		ch.Lists[l] = o.gens[s] != c.gens[s]
	}
	ch.Patched, ch.Budgets = o.patches != c.patches, o.budgets != c.budgets
	if o.ring != nil && c.finished < o.finished {
		from := c.finished
		if o.finished-from > finishRing {
			ch.Lost, from = true, o.finished-finishRing
		}
		for n := from; n < o.finished; n++ {
			ch.Finished = append(ch.Finished, o.ring[n%finishRing])
		}
	}
	c.gens, c.patches, c.budgets, c.finished = o.gens, o.patches, o.budgets, o.finished
	return ch
}

// timedEntry is a member of an ordered set of jobs by a time: in flight by
// dequeued_at, scheduled by ready_at.
type timedEntry struct {
	at  int64
	id  jobid.ID
	idx int32
}

func (a timedEntry) less(b timedEntry) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.id.Less(b.id)
}

func (a timedEntry) jobRef() ref { return ref{id: a.id, idx: a.idx} }

func sortTimed(es []timedEntry) []timedEntry {
	slices.SortFunc(es, func(a, b timedEntry) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	return es
}

// timedIndex is an ordered set kept only while someone watches. Between
// begin and finish (the lock released meanwhile) changes are logged, then
// replayed over the sorted entries begin returned.
type timedIndex struct {
	state indexState
	tree  bptree[timedEntry]
	log   []timedChange
}

type indexState uint8

const (
	indexOff indexState = iota
	indexBuilding
	indexOn
)

type timedChange struct {
	e   timedEntry
	add bool
}

func (x *timedIndex) begin(entries []timedEntry) []timedEntry {
	x.state = indexBuilding
	return entries
}

func (x *timedIndex) finish(sorted []timedEntry) {
	for _, e := range sorted {
		x.tree.set(e)
	}
	for _, c := range x.log {
		if c.add {
			x.tree.set(c.e)
		} else {
			x.tree.delete(c.e)
		}
	}
	x.log, x.state = nil, indexOn
}

func (x *timedIndex) add(e timedEntry) {
	switch x.state {
	case indexOn:
		x.tree.set(e)
	case indexBuilding:
		x.log = append(x.log, timedChange{e: e, add: true})
	}
}

func (x *timedIndex) remove(e timedEntry) {
	switch x.state {
	case indexOn:
		x.tree.delete(e)
	case indexBuilding:
		x.log = append(x.log, timedChange{e: e})
	}
}

// flightEntries returns every job in flight, in no order.
func (e *Engine) flightEntries() []timedEntry {
	out := make([]timedEntry, 0, e.inFlight)
	for _, t := range e.takerSlots {
		if t == nil {
			continue
		}
		for idx, f := range t.inFlight {
			out = append(out, timedEntry{at: f.dequeuedAt, id: f.id, idx: idx})
		}
	}
	return out
}

// schedEntries returns every scheduled job, in no order.
func (e *Engine) schedEntries() []timedEntry {
	out := make([]timedEntry, len(e.promos.items))
	for i, p := range e.promos.items {
		out[i] = timedEntry(p)
	}
	return out
}
