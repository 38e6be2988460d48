package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

type testInt int

func (a testInt) less(b testInt) bool { return a < b }

// TestBptree_MatchesSortedSlice drives the tree and a sorted slice with the
// same random inserts (mostly appends, as new jobs are), deletes (mostly
// from the front, as dispatch does) and queries.
func TestBptree_MatchesSortedSlice(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, seed))
		var tr bptree[testInt]
		var want []testInt
		next := testInt(0)
		for step := range 3000 {
			switch k := rng.IntN(10); {
			case k < 5: // append
				if len(want) > 0 {
					next = max(next, want[len(want)-1])
				}
				next += testInt(1 + rng.IntN(3))
				require.True(t, tr.set(next))
				want = append(want, next)
			case k < 6: // insert anywhere (a requeue, a restore)
				x := testInt(rng.IntN(int(next) + 10))
				i, found := slices.BinarySearch(want, x)
				require.Equal(t, !found, tr.set(x), "seed %d step %d", seed, step)
				if !found {
					want = slices.Insert(want, i, x)
				}
			case k < 8 && len(want) > 0: // delete the first
				require.True(t, tr.delete(want[0]))
				want = want[1:]
			case len(want) > 0: // delete anywhere
				i := rng.IntN(len(want))
				require.True(t, tr.delete(want[i]))
				want = slices.Delete(want, i, i+1)
			}
			require.Equal(t, len(want), tr.len())
			if step%50 != 0 {
				continue
			}
			requireWellFormed(t, &tr)
			var got []testInt
			tr.ascend(0, func(x testInt) bool { got = append(got, x); return true })
			require.Equal(t, len(want), len(got), "seed %d step %d", seed, step)
			if len(want) > 0 {
				require.Equal(t, want, got, "seed %d step %d", seed, step)
			}
			if len(want) > 0 {
				f, _ := tr.first()
				l, _ := tr.last()
				require.Equal(t, want[0], f)
				require.Equal(t, want[len(want)-1], l)
				i := rng.IntN(len(want))
				at, ok := tr.at(i)
				require.True(t, ok)
				require.Equal(t, want[i], at)
				x := testInt(rng.IntN(int(next) + 2))
				lo, _ := slices.BinarySearch(want, x)
				hi := lo
				if hi < len(want) && want[hi] == x {
					hi++
				}
				require.Equal(t, lo, tr.rank(x, false))
				require.Equal(t, hi, tr.rank(x, true))
				_, ok = tr.get(x)
				require.Equal(t, hi > lo, ok)
				var from []testInt
				tr.ascend(i, func(x testInt) bool { from = append(from, x); return len(from) < 5 })
				require.Equal(t, want[i:min(i+5, len(want))], from)
			}
		}
	}
}

// TestBptree_AppendsStayDense: a tree filled in order holds its members in
// full leaves.
func TestBptree_AppendsStayDense(t *testing.T) {
	t.Parallel()
	var tr bptree[testInt]
	for i := range 100_000 {
		tr.set(testInt(i))
	}
	leaves, items := 0, 0
	var walk func(n *bnode[testInt])
	walk = func(n *bnode[testInt]) {
		if n.leaf {
			leaves++
			items += len(n.items)
			return
		}
		for _, k := range n.kids {
			walk(k)
		}
	}
	walk(tr.root)
	require.Equal(t, 100_000, items)
	require.LessOrEqual(t, leaves, 100_000/bmax+1, "leaves are full")
}

// TestBptree_DeepTreeMatchesSortedSlice drives a tree three levels deep
// as a backlog is: appended in order, drained from the front, with some
// deletes anywhere, so inner nodes split and merge and drained leaves are
// merged into their neighbours.
func TestBptree_DeepTreeMatchesSortedSlice(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	var tr bptree[testInt]
	var want []testInt
	next := testInt(0)
	rounds := 6
	if testing.Short() {
		rounds = 2 // the race run: still three levels deep
	}
	for round := range rounds {
		for range 150_000 {
			next += testInt(1 + rng.IntN(3))
			tr.set(next)
			want = append(want, next)
		}
		for range 140_000 {
			if rng.IntN(4) == 0 {
				i := rng.IntN(len(want))
				require.True(t, tr.delete(want[i]))
				want = slices.Delete(want, i, i+1)
			} else {
				require.True(t, tr.delete(want[0]))
				want = want[1:]
			}
		}
		requireWellFormed(t, &tr)
		var got []testInt
		tr.ascend(0, func(x testInt) bool { got = append(got, x); return true })
		require.Equal(t, want, got, "round %d", round)
		require.Equal(t, len(want), tr.len())
		for range 100 {
			i := rng.IntN(len(want))
			at, ok := tr.at(i)
			require.True(t, ok)
			require.Equal(t, want[i], at)
			require.Equal(t, i, tr.rank(want[i], false))
		}
	}
}

// requireWellFormed checks what every lookup relies on, node by node: each
// count is its subtree's members, each first member is its child's, no
// node is empty, and each leaf is in order. The ends' fast paths
// (appendLast, deleteFirst) keep these by hand.
func requireWellFormed(t *testing.T, tr *bptree[testInt]) {
	t.Helper()
	if tr.root == nil {
		require.Zero(t, tr.len())
		return
	}
	var walk func(n *bnode[testInt]) (count int, first testInt)
	walk = func(n *bnode[testInt]) (int, testInt) {
		if n.leaf {
			require.NotEmpty(t, n.items, "empty leaf")
			require.True(t, slices.IsSorted(n.items), "leaf out of order")
			require.Equal(t, len(n.items), n.n, "leaf count")
			return n.n, n.items[0]
		}
		require.NotEmpty(t, n.kids, "inner node without children")
		require.Len(t, n.items, len(n.kids))
		sum := 0
		for i, k := range n.kids {
			c, f := walk(k)
			require.Equal(t, f, n.items[i], "first member of child %d", i)
			sum += c
		}
		require.Equal(t, sum, n.n, "inner count")
		return sum, n.items[0]
	}
	n, _ := walk(tr.root)
	require.Equal(t, n, tr.len(), "tree count")
}
