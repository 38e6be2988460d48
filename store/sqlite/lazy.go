package sqlite

import (
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/store"
)

// Dispatch marks (store.DispatchMark) are held back: on a busy server most
// jobs are acknowledged, and deleted, moments after their dispatch, and a
// mark whose job is deleted before it is written costs nothing, where
// writing it costs as much as the delete (a row rewrite and an index
// entry). The writer holds a mark until the first of: an op on the same
// job (the mark is written first, in that op's transaction, or dropped if
// the op deletes the job), its delay, a Barrier, a task, a store-wide op,
// too many held marks, Close.

// DefaultMarkDelay is the default of Options.MarkDelay: the longest a
// dispatch mark is held back.
const DefaultMarkDelay = 200 * time.Millisecond

// maxHeldMarks bounds the held marks (about 100 bytes each); past it the
// next transaction writes them all.
const maxHeldMarks = 100_000

// heldMarks are the marks the writer holds; the writer goroutine's own,
// but for count.
type heldMarks struct {
	byID  map[string]*heldMark
	order []heldEntry // in the order they were held; entries replaced or written since are skipped
	head  int
	seq   uint64
	count atomic.Int64 // len(byID), for Barrier
	timer *time.Timer
	txs   uint64 // transactions planned, for heldMark.picked
}

type heldMark struct {
	mark   store.SetStatusOp
	at     time.Time
	seq    uint64 // its entry in order
	picked uint64 // the last planned transaction that writes it (dueMarks)
}

type heldEntry struct {
	id  string
	seq uint64
}

// txOps returns the ops of a transaction of groups: first the held marks
// it must write (a group of their own ahead of the others, so coalescing
// drops those whose job the groups delete), then the groups' ops,
// coalesced. Each lazy mark that is the last op on its job in the
// transaction is held instead (opNone in ops) and returned in held;
// written lists the held marks the transaction writes or drops. Nothing
// changes until keep is called with them after the commit.
func (db *DB) txOps(groups []*group, now time.Time) (ops []op, written []string, held []store.SetStatusOp) {
	if db.opts.plainWrites {
		for _, g := range groups {
			ops = append(ops, g.Ops...)
		}
		return ops, nil, nil
	}
	h := &db.held
	lead, written := db.dueMarks(groups, now)
	all := make([]*group, 0, len(groups)+1)
	if len(lead) > 0 {
		all = append(all, &group{Ops: lead})
	}
	ops = coalesce(append(all, groups...))
	if db.opts.MarkDelay < 0 || everything(groups) {
		// A flush (a Barrier) promises every mark appended before it, and
		// a store-wide op reads every row: a mark of this transaction is
		// written with it, not held past it.
		return ops, written, nil
	}
	// lazy: job ID -> index of its last lazy mark, while no op on the job
	// follows it.
	var lazy map[string]int
	for i := range ops {
		o := &ops[i]
		if o.kind == opNone {
			continue
		}
		delete(lazy, o.id)
		if o.kind == opSetStatus && o.src.(store.SetStatusOp).Lazy {
			if lazy == nil {
				lazy = make(map[string]int)
			}
			lazy[o.id] = i
		}
	}
	for _, i := range lazy {
		if len(h.byID)+len(held) >= maxHeldMarks {
			break
		}
		held = append(held, ops[i].src.(store.SetStatusOp))
		ops[i].kind = opNone
	}
	return ops, written, held
}

// dueMarks returns the held marks a transaction of groups writes first, as
// ops (no longer lazy), and their job IDs: those of jobs the groups touch,
// those held past the delay, or all of them before a store-wide op.
func (db *DB) dueMarks(groups []*group, now time.Time) ([]op, []string) {
	h := &db.held
	if len(h.byID) == 0 {
		return nil, nil
	}
	h.txs++
	var ids []string
	pick := func(id string, m *heldMark) {
		if m.picked != h.txs {
			m.picked = h.txs
			ids = append(ids, id)
		}
	}
	if everything(groups) || len(h.byID) >= maxHeldMarks {
		for id, m := range h.byID {
			pick(id, m)
		}
	} else {
		for _, g := range groups {
			for i := range g.Ops {
				if m, ok := h.byID[g.Ops[i].id]; ok {
					pick(g.Ops[i].id, m)
				}
			}
		}
		for _, e := range h.order[h.head:] {
			m, ok := h.byID[e.id]
			if !ok || m.seq != e.seq {
				continue
			}
			if now.Sub(m.at) < db.opts.MarkDelay {
				break
			}
			pick(e.id, m)
		}
	}
	lead := make([]op, len(ids))
	for i, id := range ids {
		m := h.byID[id].mark
		m.Lazy = false
		lead[i] = op{kind: opSetStatus, id: id, src: m}
	}
	return lead, ids
}

// everything reports whether groups hold an op on every row, or a flush.
func everything(groups []*group) bool {
	for _, g := range groups {
		for i := range g.Ops {
			switch g.Ops[i].kind {
			case opDeleteEverything, opRecoverInFlight, opFlushMarks:
				return true
			}
		}
	}
	return false
}

// keep records a committed transaction's outcome for the held marks.
func (db *DB) keep(written []string, held []store.SetStatusOp, now time.Time) {
	h := &db.held
	if h.byID == nil {
		h.byID = make(map[string]*heldMark)
	}
	for _, id := range written {
		delete(h.byID, id)
	}
	for _, m := range held {
		h.seq++
		h.byID[m.ID] = &heldMark{mark: m, at: now, seq: h.seq}
		h.order = append(h.order, heldEntry{id: m.ID, seq: h.seq})
	}
	h.dropStale()
	h.count.Store(int64(len(h.byID)))
}

// dropStale advances past order's entries whose marks are gone, and drops
// the consumed prefix once it is half the order.
func (h *heldMarks) dropStale() {
	for h.head < len(h.order) {
		e := h.order[h.head]
		if m, ok := h.byID[e.id]; ok && m.seq == e.seq {
			break
		}
		h.order[h.head] = heldEntry{}
		h.head++
	}
	if h.head >= 1024 && h.head >= len(h.order)/2 {
		h.order = append([]heldEntry(nil), h.order[h.head:]...)
		h.head = 0
	}
}

// nextDue returns when the oldest held mark falls due, if any is held.
func (db *DB) nextDue() (time.Time, bool) {
	h := &db.held
	if h.head >= len(h.order) {
		return time.Time{}, false
	}
	return h.byID[h.order[h.head].id].at.Add(db.opts.MarkDelay), true
}

// flushMarks writes every held mark, in a transaction of its own: before a
// task, when the writer exits, and when the oldest falls due while the
// writer is idle.
func (db *DB) flushMarks() {
	if len(db.held.byID) == 0 {
		return
	}
	if err := db.runTx([]*group{{Ops: []op{{kind: opFlushMarks}}}}); err != nil {
		db.log.Warn("store write failed", "groups", 0, "err", err)
		return
	}
	db.maint.dirty = true
}
