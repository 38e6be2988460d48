package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPtrSet_MatchesMap drives a set and a map with the same random adds
// and removes, across the size at which the set starts its index.
func TestPtrSet_MatchesMap(t *testing.T) {
	t.Parallel()
	items := make([]*int, 40)
	for i := range items {
		items[i] = new(int)
	}
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, seed))
		var s ptrSet[*int]
		want := map[*int]bool{}
		for range 2000 {
			x := items[rng.IntN(len(items))]
			if rng.IntN(2) == 0 {
				s.add(x)
				want[x] = true
			} else {
				s.remove(x)
				delete(want, x)
			}
			require.Equal(t, len(want), s.len(), "seed %d", seed)
			seen := map[*int]bool{}
			for _, y := range s.list {
				require.True(t, want[y], "seed %d: a member that was removed", seed)
				require.False(t, seen[y], "seed %d: a member twice", seed)
				seen[y] = true
			}
			for _, y := range items {
				require.Equal(t, want[y], s.has(y), "seed %d", seed)
			}
		}
	}
}
