package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCostCounts_MatchesMap binds and unbinds jobs of a few costs at random
// and checks the counts against a plain map of cost to count.
func TestCostCounts_MatchesMap(t *testing.T) {
	t.Parallel()
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, seed))
		var c costCounts
		want := map[int64]int64{}
		for step := range 500 {
			cost := int64(1 + rng.IntN(4))
			delta := int64(1)
			if want[cost] > 0 && rng.IntN(2) == 0 {
				delta = -1
			}
			c.add(cost, delta)
			if want[cost] += delta; want[cost] == 0 {
				delete(want, cost)
			}
			got := map[int64]int64{}
			for cost, n := range c.all() {
				got[cost] = n
			}
			require.Equal(t, want, got, "seed %d step %d", seed, step)
		}
	}
}
