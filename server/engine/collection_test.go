package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// drainFamily parks jobs (round robin) on keys sub-keys of family own
// (1 in flight per sub-key), drains n of them with a worker of prefetch 8
// that acks as it goes (the clock moving on 1 ms whenever nothing came),
// and returns the entries examined and the decisions made while draining.
func drainFamily(t testing.TB, own store.Budget, keys, jobs, n int) (examined, decisions uint64) {
	tb := setup(t)
	tb.family(t, "c", own, wif(1))
	for i := range jobs {
		tb.enqueue(t, spec{queue: "q", binds: bindings(fmt.Sprintf("c/k%d", i%keys), 1)})
	}
	tk := tb.e.NewTaker([]string{"q"}, 8)
	w0, d0 := tb.e.Work()
	for done := 0; done < n; {
		ids := drainIDs(tk)
		if len(ids) == 0 {
			require.Less(t, tb.clk.Now().Sub(epoch), time.Hour, "the family's backlog flows")
			tb.clk.Advance(time.Millisecond)
			continue
		}
		tb.ack(t, ids...)
		done += len(ids)
	}
	w1, d1 := tb.e.Work()
	return w1 - w0, d1 - d0
}

// TestEngine_FamilyDecisionsDoNotScanSubKeys: a change of a family's pool
// looks at its collection, not at each of its groups, so the work of a
// decision does not grow with the number of live sub-keys (issue 16: with
// 10,000 sub-keys each dispatch recomputed every group and scanned every
// sub-budget's head; a time_based family's refill moment looked at every
// group).
func TestEngine_FamilyDecisionsDoNotScanSubKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		own  store.Budget
	}{
		{"WhileInFlight", wif(4)},
		{"TimeBased", rate(4, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sizes := []int{10, 2_000}
			var perDecision []float64
			for _, keys := range sizes {
				examined, decisions := drainFamily(t, tc.own, keys, 4_000, 400)
				require.GreaterOrEqual(t, decisions, uint64(400-8), "the taker was served (its first jobs came before the count)")
				perDecision = append(perDecision, float64(examined)/float64(decisions))
			}
			t.Logf("entries examined per decision: %v", perDecision)
			require.Less(t, perDecision[1], 2*perDecision[0]+10,
				"entries examined per decision with %d sub-keys against %d (%v)", sizes[1], sizes[0], perDecision)
		})
	}
}
