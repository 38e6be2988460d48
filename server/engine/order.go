package engine

import "github.com/zizq/zizq/server/jobid"

// key is a job's place in the one dispatch order: (priority, tag, id).
// The tag is a time in ms: the job's fair-share tag when it is bound to a
// family's sub-budget (families.go), else its ID's own time, so that jobs
// outside families keep their (priority, id) order among themselves.
type key struct {
	prio uint16
	tag  int64
	id   jobid.ID
}

func (a key) less(b key) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.tag != b.tag {
		return a.tag < b.tag
	}
	return a.id.Less(b.id)
}

// item is a member of an ordered job set: the job's key and its record,
// laid out in 32 bytes and no pointer, so sets of millions cost the
// collector nothing.
type item struct {
	id   jobid.ID
	tag  int64
	idx  int32
	prio uint16
}

// none is the absent item (a record index is never negative).
var none = item{idx: -1}

func (it item) ok() bool           { return it.idx >= 0 }
func (it item) k() key             { return key{prio: it.prio, tag: it.tag, id: it.id} }
func (it item) less(o item) bool   { return it.k().less(o.k()) }
func itemAt(k key, idx int32) item { return item{id: k.id, tag: k.tag, idx: idx, prio: k.prio} }

// jobSet is a set of jobs in dispatch order that counts its members.
type jobSet struct{ t *bptree[item] }

func newJobSet() jobSet { return jobSet{&bptree[item]{}} }

func (s jobSet) insert(it item) { s.t.set(it) }
func (s jobSet) remove(k key)   { s.t.delete(itemAt(k, 0)) }
func (s jobSet) len() int       { return s.t.len() }

func (s jobSet) min() item {
	if it, ok := s.t.first(); ok {
		return it
	}
	return none
}

func (s jobSet) max() item {
	if it, ok := s.t.last(); ok {
		return it
	}
	return none
}

func (s jobSet) at(i int) item {
	if it, ok := s.t.at(i); ok {
		return it
	}
	return none
}

// ascend calls f on every member from the i-th on, in order, while f
// returns true.
func (s jobSet) ascend(i int, f func(item) bool) { s.t.ascend(i, f) }

// rank counts the members before k, or at or before it when inclusive.
func (s jobSet) rank(k key, inclusive bool) int { return s.t.rank(itemAt(k, 0), inclusive) }

// bound is a prefix of the dispatch order: every key, no key, or the keys
// before k (and k itself when incl). A budget's pay region over a group is
// such a prefix, and so is the intersection of several.
type bound struct {
	kind boundKind
	k    key
	incl bool
}

type boundKind uint8

const (
	boundNone boundKind = iota // admits nothing
	boundAt                    // admits keys before k (and k when incl)
	boundAll                   // admits everything
)

var (
	admitAll  = bound{kind: boundAll}
	admitNone = bound{kind: boundNone}
)

func (b bound) admits(k key) bool {
	switch b.kind {
	case boundAll:
		return true
	case boundAt:
		return k.less(b.k) || (b.incl && k == b.k)
	}
	return false
}

// tighter returns the more restrictive of two bounds.
func (b bound) tighter(o bound) bound {
	if b.kind != o.kind {
		if b.kind < o.kind {
			return b
		}
		return o
	}
	if b.kind != boundAt {
		return b
	}
	if b.k.less(o.k) || (b.k == o.k && !b.incl) {
		return b
	}
	return o
}

// count returns how many members of s the bound admits.
func (b bound) count(s jobSet) int {
	switch b.kind {
	case boundAll:
		return s.len()
	case boundAt:
		return s.rank(b.k, b.incl)
	}
	return 0
}
