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
// laid out in 28 bytes and no pointer, so sets of millions cost the
// collector nothing. The tag is held as lead, its difference from the ID's
// time: every key comes from keyOf, whose tag is the ID's time plus a lead
// of 32 bits (leadOf), so nothing is lost, and the 4-byte words of the ID
// (packedID) leave no padding.
type item struct {
	id   packedID
	lead int32
	idx  int32
	prio uint16
}

// none is the absent item (a record index is never negative).
var none = item{idx: -1}

func (it item) ok() bool   { return it.idx >= 0 }
func (it item) tag() int64 { return it.id.millis() + int64(it.lead) }
func (it item) k() key     { return key{prio: it.prio, tag: it.tag(), id: it.id.unpack()} }

// less is key.less, without building the keys.
func (it item) less(o item) bool {
	if it.prio != o.prio {
		return it.prio < o.prio
	}
	if a, b := it.tag(), o.tag(); a != b {
		return a < b
	}
	return it.id.less(o.id)
}

// itemAt is the member of key k (a key of keyOf) and record idx.
func itemAt(k key, idx int32) item {
	return item{id: packID(k.id), lead: int32(k.tag - k.id.Millis()), idx: idx, prio: k.prio}
}

// packedID is a job ID in four 32-bit words: the records of ordered sets
// align to 4 bytes instead of the 8 of jobid.ID, which saves the padding
// of an item (32 bytes to 28) and of an id index entry (24 to 20) on every
// job. Each half's low word comes first, as a little-endian machine lays
// out a uint64, so the compiler reads each half in one load; a struct
// rather than an array, so that values stay in registers.
type packedID struct{ hi0, hi1, lo0, lo1 uint32 }

func packID(id jobid.ID) packedID {
	return packedID{uint32(id.Hi), uint32(id.Hi >> 32), uint32(id.Lo), uint32(id.Lo >> 32)}
}

func (p packedID) hi() uint64 { return uint64(p.hi1)<<32 | uint64(p.hi0) }
func (p packedID) lo() uint64 { return uint64(p.lo1)<<32 | uint64(p.lo0) }

func (p packedID) unpack() jobid.ID { return jobid.ID{Hi: p.hi(), Lo: p.lo()} }

// millis is the ID's time, as jobid.ID.Millis.
func (p packedID) millis() int64 { return int64(p.hi() >> 16) }

// less is jobid.ID.Less.
func (p packedID) less(o packedID) bool {
	if a, b := p.hi(), o.hi(); a != b {
		return a < b
	}
	return p.lo() < o.lo()
}

func (p packedID) String() string { return p.unpack().String() }

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
