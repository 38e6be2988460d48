package engine

// bptree is an ordered set of T that counts its members (rank and index
// lookups in O(log n)) and stays dense under the engine's usual pattern:
// new jobs have increasing IDs, so most inserts land after every member,
// and dispatch removes from the front. A full rightmost leaf then starts a
// new leaf instead of splitting, so leaves end full (a plain B-tree leaves
// each split node half empty, doubling the memory of a backlog).
//
// It was written for the engine rather than taken from a library because
// the libraries tried (github.com/tidwall/btree, google/btree) keep a
// sequentially filled tree about half full: 68 bytes per 24-byte member.
type bptree[T lesser[T]] struct {
	root *bnode[T] // its n counts the members: the tree keeps no count of its own
}

// lesser is an item type with its order.
type lesser[T any] interface{ less(T) bool }

// bmax is the most members of a leaf and children of an inner node.
const bmax = 64

// bigTree is the size from which a tree's new last leaf gets its full
// size at once (splitTail).
const bigTree = 16 * bmax

// leafStep is the granule a leaf's array grows by. Leaves begin small and
// grow by half (rounded up to leafStep) rather than doubling: a family's
// many small groups each have a partial last leaf, which would otherwise
// hold up to twice its members.
const leafStep = 8

// roomFor returns items with room for more members, growing the array in
// the steps leafStep describes, never past bmax unless more needs it.
func roomFor[T any](items []T, more int) []T {
	need := len(items) + more
	if need <= cap(items) {
		return items
	}
	c := max(need, cap(items)+cap(items)/2)
	c = (c + leafStep - 1) / leafStep * leafStep
	if need <= bmax {
		c = min(c, bmax)
	}
	out := make([]T, len(items), c)
	copy(out, items)
	return out
}

type bnode[T lesser[T]] struct {
	n    int // members in this subtree
	leaf bool
	// items holds a leaf's members, ascending (cap up to bmax), and an
	// inner node's first member of each child: one field for both keeps
	// a node in one cache line (64 bytes), and a family's many small
	// trees are each visited cold.
	items []T
	kids  []*bnode[T] // inner: children
}

func (t *bptree[T]) len() int {
	if t.root == nil {
		return 0
	}
	return t.root.n
}

// first returns the smallest member.
func (t *bptree[T]) first() (T, bool) {
	var zero T
	n := t.root
	if n == nil {
		return zero, false
	}
	for !n.leaf {
		n = n.kids[0]
	}
	return n.items[0], true
}

// last returns the largest member.
func (t *bptree[T]) last() (T, bool) {
	var zero T
	n := t.root
	if n == nil {
		return zero, false
	}
	for !n.leaf {
		n = n.kids[len(n.kids)-1]
	}
	return n.items[len(n.items)-1], true
}

// get returns the member equal to x.
func (t *bptree[T]) get(x T) (T, bool) {
	var zero T
	n := t.root
	if n == nil {
		return zero, false
	}
	for !n.leaf {
		n = n.kids[n.child(x)]
	}
	i := lowerBound(n.items, x)
	if i < len(n.items) && !x.less(n.items[i]) {
		return n.items[i], true
	}
	return zero, false
}

// child returns the index of the child whose range holds x. The ends are
// looked at first: most lookups are at the front (dispatch) or the back
// (new jobs), and a cold node then costs one line, not a search's worth.
func (n *bnode[T]) child(x T) int {
	last := len(n.items) - 1
	switch {
	case last == 0 || x.less(n.items[1]):
		return 0
	case !x.less(n.items[last]):
		return last
	}
	lo, hi := 2, last
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if x.less(n.items[mid]) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo - 1
}

// lowerBound returns the index of the first item not less than x, looking
// at the ends first (child says why).
func lowerBound[T lesser[T]](items []T, x T) int {
	last := len(items) - 1
	switch {
	case last < 0 || !items[0].less(x):
		return 0
	case items[last].less(x):
		return last + 1
	}
	lo, hi := 1, last
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if items[mid].less(x) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// set inserts x, replacing an equal member; it reports whether x is new.
func (t *bptree[T]) set(x T) bool {
	if t.root == nil {
		t.root = &bnode[T]{leaf: true, items: make([]T, 0, leafStep)}
	} else if t.appendLast(x) {
		return true
	}
	added, split := t.root.insert(x, true, t.root.n >= bigTree)
	if split != nil {
		old := t.root
		t.root = &bnode[T]{n: old.n + split.n, kids: []*bnode[T]{old, split}, items: []T{old.firstItem(), split.firstItem()}}
	}
	return added
}

// appendLast puts x at the end of the last leaf when x comes after every
// member and the leaf has room, which is what most inserts are (new jobs,
// a collection's sets turning over): the path down the right edge is
// known without a comparison, and nothing above the leaf but the counts
// changes. It reports whether it did.
func (t *bptree[T]) appendLast(x T) bool {
	n := t.root
	for !n.leaf {
		n = n.kids[len(n.kids)-1]
	}
	if len(n.items) == 0 || len(n.items) == bmax || !n.items[len(n.items)-1].less(x) {
		return false
	}
	n.items = append(roomFor(n.items, 1), x)
	n.n++
	for m := t.root; m != n; m = m.kids[len(m.kids)-1] {
		m.n++
	}
	return true
}

func (n *bnode[T]) firstItem() T {
	for !n.leaf {
		n = n.kids[0]
	}
	return n.items[0]
}

// insert puts x in the subtree; rightmost says the subtree is the last of
// the tree, big that the tree holds bigTree members or more. It returns
// whether x was added and a new right sibling when the node had to split.
func (n *bnode[T]) insert(x T, rightmost, big bool) (bool, *bnode[T]) {
	if n.leaf {
		i := lowerBound(n.items, x)
		if i < len(n.items) && !x.less(n.items[i]) {
			n.items[i] = x
			return false, nil
		}
		if len(n.items) < bmax {
			n.items = append(roomFor(n.items, 1), x)
			copy(n.items[i+1:], n.items[i:])
			n.items[i] = x
			n.n++
			return true, nil
		}
		if rightmost && i >= bmax/2 {
			// At or near the end of a full last leaf (new members come
			// in order, or a few at a time in reverse): a new leaf takes x
			// and the members after it, and this one stays (nearly) full.
			// Splitting in half would leave it half empty for good.
			return true, n.splitTail(i, x, big)
		}
		right := n.splitLeaf()
		if i > len(n.items) {
			added, _ := right.insert(x, false, big)
			return added, right
		}
		added, _ := n.insert(x, false, big)
		return added, right
	}
	c := n.child(x)
	added, split := n.kids[c].insert(x, rightmost && c == len(n.kids)-1, big)
	if added {
		n.n++ // a split below moves members between children, not out
	}
	if x.less(n.items[c]) {
		n.items[c] = x
	}
	if split == nil {
		return added, nil
	}
	n.kids = append(n.kids, nil)
	copy(n.kids[c+2:], n.kids[c+1:])
	n.kids[c+1] = split
	first := split.firstItem()
	n.items = append(n.items, first)
	copy(n.items[c+2:], n.items[c+1:])
	n.items[c+1] = first
	if len(n.kids) <= bmax {
		return added, nil
	}
	if rightmost && c+1 == len(n.kids)-1 {
		// The split child was the last: move it alone to a new right node.
		right := &bnode[T]{n: split.n, kids: []*bnode[T]{split}, items: []T{split.firstItem()}}
		n.kids = n.kids[:len(n.kids)-1]
		n.items = n.items[:len(n.items)-1]
		n.n -= split.n
		return added, right
	}
	return added, n.splitInner()
}

// splitTail moves the members from the i-th on to a new right leaf,
// after x, which belongs at i. A plain append starts the leaf small (a
// family's many small groups each end in one); members out of order mean
// a busy tree, whose new last leaf will fill: it gets its full size at once.
// So does the last leaf of a big tree: one partial leaf is nothing beside
// its members, and a tree that turns over (a collection's sets, which
// take at the back what dispatch takes from the front) would otherwise
// grow each new leaf through every step, garbage for the collector.
func (n *bnode[T]) splitTail(i int, x T, big bool) *bnode[T] {
	tail := n.items[i:]
	size := leafStep
	if len(tail) > 0 || big {
		size = bmax
	}
	right := &bnode[T]{leaf: true, items: append(append(make([]T, 0, size), x), tail...)}
	clear(tail)
	n.items = n.items[:i]
	n.n, right.n = len(n.items), len(right.items)
	return right
}

func (n *bnode[T]) splitLeaf() *bnode[T] {
	half := len(n.items) / 2
	right := &bnode[T]{leaf: true, items: make([]T, len(n.items)-half, bmax)}
	copy(right.items, n.items[half:])
	clear(n.items[half:])
	n.items = n.items[:half]
	n.n, right.n = len(n.items), len(right.items)
	return right
}

func (n *bnode[T]) splitInner() *bnode[T] {
	half := len(n.kids) / 2
	right := &bnode[T]{
		kids:  append([]*bnode[T](nil), n.kids[half:]...),
		items: append([]T(nil), n.items[half:]...),
	}
	clear(n.kids[half:])
	n.kids = n.kids[:half]
	n.items = n.items[:half]
	n.n = 0
	for _, k := range n.kids {
		n.n += k.n
	}
	for _, k := range right.kids {
		right.n += k.n
	}
	return right
}

// delete removes the member equal to x; it reports whether there was one.
func (t *bptree[T]) delete(x T) bool {
	if t.root == nil {
		return false
	}
	if t.deleteFirst(x) {
		return true
	}
	if !t.root.remove(x, true) {
		return false
	}
	for !t.root.leaf && len(t.root.kids) == 1 {
		t.root = t.root.kids[0]
	}
	if t.root.leaf && len(t.root.items) == 0 {
		t.root = nil
	}
	return true
}

// deleteFirst removes x when it is the first member and removing it changes
// nothing but the first leaf's front and the counts and first members on
// the way down to it, as dispatch does from a backlog: no node runs low
// (remove would merge it). The first leaf is not the last one (remove
// drops a front slot only from a leaf that takes no appends): the root has
// two children or more. It reports whether it did.
func (t *bptree[T]) deleteFirst(x T) bool {
	n := t.root
	if n.leaf || len(n.kids) == 1 { // a root of one child: remove lifts it
		return false
	}
	for !n.leaf {
		k := n.kids[0]
		if k.leaf && len(k.items)-1 < bmax/4 || !k.leaf && len(k.kids) < bmax/4 {
			return false
		}
		n = k
	}
	if x.less(n.items[0]) || n.items[0].less(x) {
		return false
	}
	var zero T
	n.items[0] = zero
	n.items = n.items[1:]
	n.n--
	first := n.items[0]
	for m := t.root; m != n; m = m.kids[0] {
		m.n--
		m.items[0] = first
	}
	return true
}

// remove deletes x from the subtree; rightmost says the subtree is the
// last of the tree. A child that empties is dropped, and one that runs low
// is merged into a neighbour that has room, so a tree drained from the
// front or the middle does not keep sparse nodes.
func (n *bnode[T]) remove(x T, rightmost bool) bool {
	if n.leaf {
		i := lowerBound(n.items, x)
		if i == len(n.items) || x.less(n.items[i]) {
			return false
		}
		var zero T
		if i == 0 && (!rightmost || len(n.items) > bmax/4) {
			// Dispatch drains a leaf from the front: drop the first slot
			// rather than move the rest (a cold leaf is 2 KiB to move).
			// Only the last leaf takes appends, so the lost room is
			// seldom wanted; a leaf that needs it again gets a new array.
			// The last leaf does so only while it is big (a small
			// group's one leaf, say): a small one is cheap to move and
			// takes appends, which would otherwise reallocate it often.
			n.items[0] = zero
			n.items = n.items[1:]
		} else {
			copy(n.items[i:], n.items[i+1:])
			n.items[len(n.items)-1] = zero
			n.items = n.items[:len(n.items)-1]
		}
		n.n--
		return true
	}
	c := n.child(x)
	if !n.kids[c].remove(x, rightmost && c == len(n.kids)-1) {
		return false
	}
	n.n--
	k := n.kids[c]
	switch {
	case k.n == 0:
		n.drop(c)
	case k.size() < bmax/4:
		n.mergeLow(c)
	default:
		n.items[c] = k.firstItem()
	}
	return true
}

func (n *bnode[T]) size() int {
	if n.leaf {
		return len(n.items)
	}
	return len(n.kids)
}

// drop removes child c.
func (n *bnode[T]) drop(c int) {
	copy(n.kids[c:], n.kids[c+1:])
	n.kids[len(n.kids)-1] = nil
	n.kids = n.kids[:len(n.kids)-1]
	copy(n.items[c:], n.items[c+1:])
	var zero T
	n.items[len(n.items)-1] = zero
	n.items = n.items[:len(n.items)-1]
}

// mergeLow merges the low child c into a neighbour when both fit in one.
func (n *bnode[T]) mergeLow(c int) {
	k := n.kids[c]
	switch {
	case c+1 < len(n.kids) && k.size()+n.kids[c+1].size() <= bmax:
		n.mergeKids(c)
	case c > 0 && n.kids[c-1].size()+k.size() <= bmax:
		n.mergeKids(c - 1)
	default:
		n.items[c] = k.firstItem()
	}
}

// mergeKids merges children i and i+1 into one, at i.
func (n *bnode[T]) mergeKids(i int) {
	l, r := n.kids[i], n.kids[i+1]
	keep := l
	if l.leaf && cap(l.items) < len(l.items)+len(r.items) && cap(r.items) >= len(l.items)+len(r.items) {
		// l lost its room to front removals and r has it: no new array.
		r.prepend(l)
		keep = r
	} else {
		l.absorb(r)
	}
	n.kids[i] = keep
	n.drop(i + 1)
	n.items[i] = keep.firstItem()
}

// prepend puts the members of its left neighbour leaf l before its own,
// in its own array, which has room for them.
func (n *bnode[T]) prepend(l *bnode[T]) {
	m := len(l.items)
	n.items = n.items[:len(n.items)+m]
	copy(n.items[m:], n.items)
	copy(n.items, l.items)
	n.n += l.n
	l.n = 0
}

// absorb appends the members or children of its right neighbour r.
func (n *bnode[T]) absorb(r *bnode[T]) {
	if n.leaf {
		n.items = append(roomFor(n.items, len(r.items)), r.items...)
	} else {
		n.kids = append(n.kids, r.kids...)
		n.items = append(n.items, r.items...)
	}
	n.n += r.n
	r.n = 0
}

// rank counts the members less than x (or not greater, when inclusive).
func (t *bptree[T]) rank(x T, inclusive bool) int {
	r := 0
	n := t.root
	if n == nil {
		return 0
	}
	for !n.leaf {
		c := n.child(x)
		for _, k := range n.kids[:c] {
			r += k.n
		}
		n = n.kids[c]
	}
	i := lowerBound(n.items, x)
	if inclusive && i < len(n.items) && !x.less(n.items[i]) {
		i++
	}
	return r + i
}

// at returns the i-th member (0-based).
func (t *bptree[T]) at(i int) (T, bool) {
	var zero T
	if i < 0 || i >= t.len() {
		return zero, false
	}
	n := t.root
	for !n.leaf {
		for _, k := range n.kids {
			if i < k.n {
				n = k
				break
			}
			i -= k.n
		}
	}
	return n.items[i], true
}

// ascend calls f on the members from the i-th on, in order, while f
// returns true.
func (t *bptree[T]) ascend(i int, f func(T) bool) {
	if t.root != nil && i >= 0 {
		t.root.ascend(i, f)
	}
}

func (n *bnode[T]) ascend(i int, f func(T) bool) bool {
	if n.leaf {
		for _, it := range n.items[min(i, len(n.items)):] {
			if !f(it) {
				return false
			}
		}
		return true
	}
	for _, k := range n.kids {
		if i >= k.n {
			i -= k.n
			continue
		}
		if !k.ascend(i, f) {
			return false
		}
		i = 0
	}
	return true
}
