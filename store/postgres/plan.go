package postgres

import (
	"github.com/zizq/zizq/store"
)

// A transaction's ops are not run one statement each: they are sorted into
// phases, and each phase runs one statement per kind of op (slot), in slot
// order, each statement taking every op of its kind in the phase at once
// (unnest of arrays, = ANY). The whole transaction goes to the database as
// one pipelined batch.
//
// The sort keeps the outcome of running the ops one by one: an op is
// placed after every earlier op it does not commute with (the ops on the
// same job; the ops on the same unique key; the unique-holder changes,
// which touch other jobs' rows; budgets and cron, kept in their order) and
// as early as that allows, so the groups of a busy server — enqueues,
// dispatches, acks, each of many jobs — take a few statements, not one per
// job. DeleteEverything and RecoverInFlight touch every row: each has a
// phase of its own, after everything before it.
//
// A batch fold's SetPayload or CloseBatch, or a ClearStartBy, right after
// the job's InsertJob (or a SetPayload after a SetPayload) is folded into
// that op, on a copy: a storm of folds on one key writes its row once per
// transaction, not once per fold. The groups' own ops are never changed, so a retry of each
// group alone sees them as appended.

// slot is a kind of op, in the order a phase runs them.
type slot uint8

const (
	slotInsert slot = iota
	slotPut
	slotStatus
	slotRetry
	slotFinish
	slotPatch
	slotBudgets
	slotPayload
	slotCloseBatch
	slotStartBy
	slotHolder // one op per phase (it is a writer of chainHolders)
	slotError
	slotDelete
	slotMisc // budgets and cron, one statement each, in order
	numSlots
)

// phase holds the ops of each slot, in append order; or one global op.
type phase struct {
	slots  [numSlots][]store.Op
	global store.Op // DeleteEverythingOp, or nil
	// recover, when set, makes the phase RecoverInFlight's, storing the
	// count there.
	recover *int64
}

// pos is a place in the plan: a phase and a slot in it.
type pos struct {
	phase int
	slot  slot
}

// after returns the first phase at which an op of slot s comes after p.
func (p pos) after(s slot) int {
	if p.phase < 0 {
		return 0
	}
	if s > p.slot {
		return p.phase
	}
	return p.phase + 1
}

// chain orders the ops that share a resource: writers after everything
// before them, readers after the writers only.
type chain struct {
	write, read pos
}

// planner sorts ops into phases.
type planner struct {
	chains map[string]*chain
	floor  int // no op goes before this phase (a global op came)
	phases []*phase
	// last is where the latest op on each job went, for folds; emptied
	// by a global op.
	last map[string]opRef
}

// opRef is the place of one op in the plan.
type opRef struct {
	pos
	i int
}

// Chain names: a job, a unique key, every key's holder, budgets and cron.
const (
	chainJob     = "j"
	chainKey     = "k"
	chainHolders = "u"
	chainMisc    = "m"
)

// plan sorts the ops of groups, in order, into phases.
func plan(groups []*group) []*phase {
	p := &planner{chains: map[string]*chain{}, last: map[string]opRef{}}
	for _, g := range groups {
		if g.Count != nil {
			p.global(&phase{recover: g.Count})
		}
		for _, o := range g.Ops {
			p.add(o)
		}
	}
	return p.phases
}

func (p *planner) add(o store.Op) {
	switch o := o.(type) {
	case store.InsertJobOp:
		if k := o.Job.UniqueKey; k != "" {
			p.last[o.Job.ID] = p.place(o, slotInsert, []string{chainJob + o.Job.ID, chainKey + k}, []string{chainHolders})
			return
		}
		p.job(o, slotInsert, o.Job.ID)
	case store.PutJobOp:
		p.job(o, slotPut, o.Job.ID)
	case store.SetStatusOp:
		p.job(o, slotStatus, o.ID)
	case store.RetryOp:
		p.job(o, slotRetry, o.ID)
	case store.FinishOp:
		p.job(o, slotFinish, o.ID)
	case store.PatchJobOp:
		p.job(o, slotPatch, o.Patch.ID)
	case store.SetBudgetsOp:
		p.job(o, slotBudgets, o.ID)
	case store.SetPayloadOp:
		if !p.fold(o.ID, o) {
			p.job(o, slotPayload, o.ID)
		}
	case store.CloseBatchOp:
		if !p.fold(o.ID, o) {
			p.job(o, slotCloseBatch, o.ID)
		}
	case store.ClearStartByOp:
		if !p.fold(o.ID, o) {
			p.job(o, slotStartBy, o.ID)
		}
	case store.UniqueHolderOp:
		p.place(o, slotHolder, []string{chainJob + o.ID, chainHolders}, nil)
		delete(p.last, o.ID) // nothing folds across it into an earlier op
	case store.AddErrorOp:
		p.job(o, slotError, o.Record.JobID)
	case store.DeleteJobOp:
		p.job(o, slotDelete, o.ID)
	case store.DeleteEverythingOp:
		p.global(&phase{global: o})
	default: // budgets and cron (checkOp let nothing else in)
		p.place(o, slotMisc, []string{chainMisc}, nil)
	}
}

func (p *planner) job(o store.Op, s slot, id string) {
	at := p.place(o, s, []string{chainJob + id}, nil)
	p.last[id] = at
}

// fold folds upd, a SetPayload, CloseBatch or ClearStartBy of job id, into
// the latest op on that job when that op writes what upd changes: an
// InsertJob, or a SetPayload for a SetPayload. It reports whether it did.
func (p *planner) fold(id string, upd store.Op) bool {
	ref, ok := p.last[id]
	if !ok {
		return false
	}
	ops := p.phases[ref.phase].slots[ref.slot]
	switch prev := ops[ref.i].(type) {
	case store.InsertJobOp:
		switch u := upd.(type) {
		case store.SetPayloadOp:
			prev.Job.Payload = u.Payload
		case store.CloseBatchOp:
			prev.Job.BatchOpen = false
		case store.ClearStartByOp:
			prev.Job.StartBy = 0
		}
		ops[ref.i] = prev
		return true
	case store.SetPayloadOp:
		if u, ok := upd.(store.SetPayloadOp); ok {
			prev.Payload = u.Payload
			ops[ref.i] = prev
			return true
		}
	}
	return false
}

// place puts o in slot s of the earliest phase after the chains it writes
// and the writers of those it reads, and returns where.
func (p *planner) place(o store.Op, s slot, writes, reads []string) opRef {
	at := p.floor
	for _, name := range writes {
		if c := p.chains[name]; c != nil {
			at = max(at, c.write.after(s), c.read.after(s))
		}
	}
	for _, name := range reads {
		if c := p.chains[name]; c != nil {
			at = max(at, c.write.after(s))
		}
	}
	for len(p.phases) <= at {
		p.phases = append(p.phases, &phase{})
	}
	ph := p.phases[at]
	ph.slots[s] = append(ph.slots[s], o)
	here := pos{at, s}
	ref := opRef{here, len(ph.slots[s]) - 1}
	for _, name := range writes {
		c := p.chain(name)
		c.write = here
		if c.read.phase < 0 || c.read.phase < at || c.read.phase == at && c.read.slot < s {
			c.read = here // a later writer orders readers after it too
		}
	}
	for _, name := range reads {
		c := p.chain(name)
		if c.read.phase < at || c.read.phase == at && c.read.slot < s {
			c.read = here
		}
	}
	return ref
}

func (p *planner) chain(name string) *chain {
	c := p.chains[name]
	if c == nil {
		c = &chain{write: pos{phase: -1}, read: pos{phase: -1}}
		p.chains[name] = c
	}
	return c
}

// global gives ph a phase of its own after every other, and puts every
// later op after it.
func (p *planner) global(ph *phase) {
	p.phases = append(p.phases, ph)
	p.floor = len(p.phases)
	clear(p.last)
}
