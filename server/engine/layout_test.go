package engine

import (
	"testing"
	"unsafe"
)

// TestLayout_CacheLines keeps the structures a family's dispatch visits
// cold within the cache lines their layout was made for: a B-tree node in
// one line, a group in two, and a budget's dispatch fields (up to its
// pool's kind, allocation and held, the pool's first 24 bytes) in the
// first five. A field added in the wrong place fails here, not in a
// benchmark that nobody reads.
func TestLayout_CacheLines(t *testing.T) {
	const line = 64
	if n := unsafe.Sizeof(bnode[item]{}); n > line {
		t.Errorf("a B-tree node is %d bytes, more than one cache line", n)
	}
	if n := unsafe.Sizeof(group{}); n > 2*line {
		t.Errorf("a group is %d bytes, more than two cache lines", n)
	}
	var a account
	if end := unsafe.Offsetof(a.pool) + 24; end > 5*line {
		t.Errorf("a budget's dispatch fields end at byte %d, past its first five cache lines", end)
	}
	if unsafe.Offsetof(a.cfg) < unsafe.Offsetof(a.pool) {
		t.Error("a budget's configuration comes before its dispatch fields")
	}
}
