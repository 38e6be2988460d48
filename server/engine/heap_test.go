package engine

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/jobid"
)

// Every heap of the engine is driven here by random pushes, pops, removes
// and updates, and checked after each against a model: a plain list of
// the members kept sorted, whose first is what the heap's top must be.

// heapDriver is one heap seen through the operations the model drives,
// on members named by small integers; an operation a heap does not have
// is nil.
type heapDriver struct {
	push   func(id int, k heapKey)
	pop    func() (id int)         // removes the top
	top    func() (id int)         // the top, not removed
	remove func(id int)            // removes a member wherever it is
	update func(id int, k heapKey) // moves a member to a new key
	len    func() int
	// check reports a broken link between a member and its index.
	check func() error
}

// heapKey is what a model member sorts by: (a, b) then the member's id,
// which the heaps under test see through their own key (a job ID, a name)
// or not at all (then only (a, b) must be in order).
type heapKey struct{ a, b int64 }

type heapModel struct {
	keys   map[int]heapKey
	sorted []int // the member ids by (key, id)
	byID   bool  // the heap orders equal keys by id too
}

func (m *heapModel) compare(x, y int) int {
	kx, ky := m.keys[x], m.keys[y]
	return cmp.Or(cmp.Compare(kx.a, ky.a), cmp.Compare(kx.b, ky.b), cmp.Compare(x, y))
}

func (m *heapModel) resort() { slices.SortFunc(m.sorted, m.compare) }

func (m *heapModel) drop(id int) {
	delete(m.keys, id)
	m.sorted = slices.DeleteFunc(m.sorted, func(x int) bool { return x == id })
}

// sameTop reports whether the heap's top may be got: the model's first,
// or (when the heap does not order by id) any member of the same key.
func (m *heapModel) sameTop(got int) bool {
	want := m.sorted[0]
	if m.byID {
		return got == want
	}
	_, member := m.keys[got]
	return member && m.keys[got] == m.keys[want]
}

// runHeapModel drives d with random operations from seed, checking it
// against the model after each.
func runHeapModel(t *testing.T, d heapDriver, byID bool, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0))
	m := &heapModel{keys: map[int]heapKey{}, byID: byID}
	// Few distinct keys, so that ties are common.
	key := func() heapKey { return heapKey{a: r.Int64N(8), b: r.Int64N(3)} }
	nextID := 0
	member := func() int { return m.sorted[r.IntN(len(m.sorted))] }
	for step := range 400 {
		op := r.IntN(10)
		var did string
		switch {
		case op < 4 || len(m.sorted) == 0:
			id, k := nextID, key()
			nextID++
			d.push(id, k)
			m.keys[id] = k
			m.sorted = append(m.sorted, id)
			did = fmt.Sprintf("push %d %v", id, k)
		case op < 6:
			got := d.pop()
			require.True(t, m.sameTop(got), "step %d: pop gave %d %v, want %d %v", step, got, m.keys[got], m.sorted[0], m.keys[m.sorted[0]])
			m.drop(got)
			did = fmt.Sprintf("pop %d", got)
		case op < 8 && d.remove != nil:
			id := member()
			d.remove(id)
			m.drop(id)
			did = fmt.Sprintf("remove %d", id)
		case d.update != nil:
			id, k := member(), key()
			d.update(id, k)
			m.keys[id] = k
			did = fmt.Sprintf("update %d %v", id, k)
		default:
			continue
		}
		m.resort()
		require.Equal(t, len(m.sorted), d.len(), "step %d (%s): size", step, did)
		require.NoError(t, d.check(), "step %d (%s)", step, did)
		if len(m.sorted) > 0 {
			got := d.top()
			require.True(t, m.sameTop(got), "step %d (%s): top is %d %v, want %d %v", step, did, got, m.keys[got], m.sorted[0], m.keys[m.sorted[0]])
		}
	}
	// Draining gives every member in order.
	for len(m.sorted) > 0 {
		got := d.pop()
		require.True(t, m.sameTop(got), "drain: pop gave %d %v, want %d %v", got, m.keys[got], m.sorted[0], m.keys[m.sorted[0]])
		m.drop(got)
	}
	require.Zero(t, d.len())
}

// checkIndexes reports the first member whose recorded index is not its
// place.
func checkIndexes(n int, idxOf func(i int) int) error {
	for i := range n {
		if got := idxOf(i); got != i {
			return fmt.Errorf("member at %d records index %d", i, got)
		}
	}
	return nil
}

// testID is the job ID of model member id: IDs order as the members do.
func testID(id int) jobid.ID { return jobid.ID{Hi: 1, Lo: uint64(id)} }

func modelIDOf(id jobid.ID) int { return int(id.Lo) }

// nsOf spreads a model key over one int64 time: (a, b) in that order.
func nsOf(k heapKey) int64 { return k.a*10 + k.b }

func eachSeed(t *testing.T, run func(t *testing.T, seed uint64)) {
	for seed := range uint64(40) {
		run(t, seed)
	}
}

func TestHeaps_MatchSortedModel(t *testing.T) {
	t.Parallel()

	t.Run("Alarms", func(t *testing.T) {
		t.Parallel()
		eachSeed(t, func(t *testing.T, seed uint64) {
			h := &alarmHeap{}
			name := func(id int) string { return fmt.Sprintf("a%04d", id) }
			idOf := func(n string) int {
				var id int
				_, err := fmt.Sscanf(n, "a%04d", &id)
				require.NoError(t, err)
				return id
			}
			runHeapModel(t, heapDriver{
				push:   func(id int, k heapKey) { h.set(name(id), nsOf(k)) },
				pop:    func() int { return idOf(h.pop()) },
				top:    func() int { return idOf(h.items[0].name) },
				remove: func(id int) { h.clear(name(id)) },
				update: func(id int, k heapKey) { h.set(name(id), nsOf(k)) },
				len:    func() int { return len(h.items) },
				check: func() error {
					if len(h.byName) != len(h.items) {
						return fmt.Errorf("%d names for %d alarms", len(h.byName), len(h.items))
					}
					return checkIndexes(len(h.items), func(i int) int { return h.items[i].idx })
				},
			}, false, seed)
		})
	})

	t.Run("Purges", func(t *testing.T) {
		t.Parallel()
		eachSeed(t, func(t *testing.T, seed uint64) {
			h := &purgeHeap{}
			runHeapModel(t, heapDriver{
				push: func(id int, k heapKey) { h.push(purge{at: nsOf(k), id: testID(id)}) },
				pop:  func() int { return modelIDOf(h.pop().id) },
				top:  func() int { return modelIDOf(h.items[0].id) },
				remove: func(id int) {
					require.True(t, h.cancel(testID(id)))
				},
				len:   func() int { return len(h.items) },
				check: func() error { return nil },
			}, false, seed)
		})
	})

	t.Run("Refills", func(t *testing.T) {
		t.Parallel()
		eachSeed(t, func(t *testing.T, seed uint64) {
			h := &refillHeap{}
			byID := map[int]*refill{}
			idOf := map[*refill]int{}
			runHeapModel(t, heapDriver{
				push: func(id int, k heapKey) {
					d := &refill{at: nsOf(k)}
					byID[id], idOf[d] = d, id
					h.push(d)
				},
				pop: func() int {
					d := h.items[0]
					h.remove(d)
					return idOf[d]
				},
				top:    func() int { return idOf[h.items[0]] },
				remove: func(id int) { h.remove(byID[id]) },
				// The engine moves a refill by removing and pushing it.
				update: func(id int, k heapKey) {
					d := byID[id]
					h.remove(d)
					d.at = nsOf(k)
					h.push(d)
				},
				len:   func() int { return len(h.items) },
				check: func() error { return checkIndexes(len(h.items), func(i int) int { return h.items[i].idx }) },
			}, false, seed)
		})
	})

	t.Run("Promotions", func(t *testing.T) {
		t.Parallel()
		eachSeed(t, func(t *testing.T, seed uint64) {
			e := setup(t).e
			h := &promoHeap{e: e}
			recOf := map[int]int32{}
			runHeapModel(t, heapDriver{
				push: func(id int, k heapKey) {
					idx := e.slab.alloc()
					recOf[id] = idx
					h.push(promo{at: nsOf(k), id: testID(id), idx: idx})
				},
				pop: func() int {
					p := h.items[0]
					h.remove(0)
					return modelIDOf(p.id)
				},
				top:    func() int { return modelIDOf(h.items[0].id) },
				remove: func(id int) { h.remove(e.rec(recOf[id]).aux) },
				// A patched ready_at leaves the heap and comes back.
				update: func(id int, k heapKey) {
					h.remove(e.rec(recOf[id]).aux)
					h.push(promo{at: nsOf(k), id: testID(id), idx: recOf[id]})
				},
				len: func() int { return len(h.items) },
				check: func() error {
					return checkIndexes(len(h.items), func(i int) int { return int(e.rec(h.items[i].idx).aux) })
				},
			}, false, seed)
		})
	})

	t.Run("Candidates", func(t *testing.T) {
		t.Parallel()
		eachSeed(t, func(t *testing.T, seed uint64) {
			h := &groupHeap{}
			byID := map[int]*candEntry{}
			cand := func(id int, k heapKey) item {
				return itemAt(key{prio: uint16(k.a), tag: k.b, id: testID(id)}, int32(id))
			}
			runHeapModel(t, heapDriver{
				push: func(id int, k heapKey) {
					c := &candEntry{cand: cand(id, k), hidx: -1}
					byID[id] = c
					h.push(c)
				},
				pop: func() int {
					c := h.items[0]
					h.remove(c)
					require.Equal(t, int32(-1), c.hidx)
					return modelIDOf(c.cand.id.unpack())
				},
				top:    func() int { return modelIDOf(h.items[0].cand.id.unpack()) },
				remove: func(id int) { h.remove(byID[id]) },
				update: func(id int, k heapKey) {
					c := byID[id]
					c.cand = cand(id, k)
					h.fix(c)
				},
				len:   func() int { return h.len() },
				check: func() error { return checkIndexes(len(h.items), func(i int) int { return int(h.items[i].hidx) }) },
			}, true, seed)
		})
	})

	t.Run("HotQueues", func(t *testing.T) {
		t.Parallel()
		eachSeed(t, func(t *testing.T, seed uint64) {
			h := &queueHeap{}
			byID := map[int]*queue{}
			// A queue sorts by its best candidate: give each one.
			setBest := func(q *queue, id int, k heapKey) {
				q.cands.items = []*candEntry{{cand: itemAt(key{prio: uint16(k.a), tag: k.b, id: testID(id)}, int32(id))}}
			}
			runHeapModel(t, heapDriver{
				push: func(id int, k heapKey) {
					q := &queue{qidx: -1}
					setBest(q, id, k)
					byID[id] = q
					h.push(q)
				},
				pop: func() int {
					q := h.min()
					h.remove(q)
					require.Equal(t, -1, q.qidx)
					return modelIDOf(q.best().id.unpack())
				},
				top:    func() int { return modelIDOf(h.min().best().id.unpack()) },
				remove: func(id int) { h.remove(byID[id]) },
				update: func(id int, k heapKey) {
					q := byID[id]
					setBest(q, id, k)
					h.fix(q)
				},
				len:   func() int { return h.len() },
				check: func() error { return checkIndexes(len(h.items), func(i int) int { return h.items[i].qidx }) },
			}, true, seed)
		})
	})

	t.Run("MergeWalk", func(t *testing.T) {
		t.Parallel()
		for _, forward := range []bool{true, false} {
			eachSeed(t, func(t *testing.T, seed uint64) {
				h := &mergeHeap[item]{forward: forward}
				mk := func(id int, k heapKey) cursor[item] {
					return cursor[item]{v: itemAt(key{prio: uint16(k.a), tag: k.b, id: testID(id)}, 0), src: id}
				}
				if !forward {
					// Backwards the top is the greatest: the keys are
					// mirrored, so that the model's first is still the top.
					mk = func(id int, k heapKey) cursor[item] {
						return cursor[item]{v: itemAt(key{prio: uint16(100 - k.a), tag: -k.b, id: testID(1000 - id)}, 0), src: id}
					}
				}
				runHeapModel(t, heapDriver{
					push: func(id int, k heapKey) { h.push(mk(id, k)) },
					pop: func() int {
						id := h.items[0].src
						h.pop()
						return id
					},
					top: func() int { return h.items[0].src },
					// mergeWalk moves its top cursor on in place.
					update: func(id int, k heapKey) {
						i := slices.IndexFunc(h.items, func(c cursor[item]) bool { return c.src == id })
						h.items[i] = mk(id, k)
						fix(h, i)
					},
					len:   func() int { return len(h.items) },
					check: func() error { return nil },
				}, true, seed)
			})
		}
	})
}
