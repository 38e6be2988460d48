package engine

import (
	"github.com/tidwall/btree"
	"github.com/zizq/zizq/server/jobid"
)

// key is a job's place in the one dispatch order: (priority, id).
type key struct {
	prio uint16
	id   jobid.ID
}

func (a key) less(b key) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.id.Less(b.id)
}

// item is a member of an ordered job set.
type item struct {
	k key
	j *job
}

func itemLess(a, b item) bool { return a.k.less(b.k) }

// jobSet is a set of jobs in dispatch order that can count its members
// before a key (GetAt is O(log n), so rank is O(log² n)).
type jobSet struct{ t *btree.BTreeG[item] }

func newJobSet() jobSet {
	return jobSet{btree.NewBTreeGOptions(itemLess, btree.Options{NoLocks: true, Degree: 32})}
}

func (s jobSet) insert(j *job)          { s.t.Set(item{j.k, j}) }
func (s jobSet) remove(j *job)          { s.t.Delete(item{k: j.k}) }
func (s jobSet) len() int               { return s.t.Len() }
func (s jobSet) min() *job              { it, _ := s.t.Min(); return it.j }
func (s jobSet) max() *job              { it, _ := s.t.Max(); return it.j }
func (s jobSet) at(i int) *job          { it, _ := s.t.GetAt(i); return it.j }
func (s jobSet) each(f func(*job) bool) { s.t.Scan(func(it item) bool { return f(it.j) }) }

// first returns the first member at or after k (nil if none).
func (s jobSet) first(k key) *job {
	var found *job
	s.t.Ascend(item{k: k}, func(it item) bool { found = it.j; return false })
	return found
}

// rank counts the members before k, or at or before it when inclusive.
func (s jobSet) rank(k key, inclusive bool) int {
	lo, hi := 0, s.t.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		it, _ := s.t.GetAt(mid)
		if it.k.less(k) || (inclusive && it.k == k) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

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
