package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// drainServed enqueues n jobs of a served queue on budget "c", behind an
// unserved backlog of the same budget, and drains them with a worker of
// prefetch 8 that acks as it goes. It returns the entries examined and the
// decisions made while draining.
func drainServed(t testing.TB, backlog, n int) (examined, decisions uint64) {
	tb := setup(t)
	tb.budget(t, "c", 4, store.WhileInFlight, 0, 0)
	for range backlog {
		tb.enqueue(t, spec{queue: "unserved", binds: bindings("c", 1)})
	}
	tk := tb.e.NewTaker([]string{"served"}, 8)
	w0, d0 := tb.e.Work()
	for range n {
		tb.enqueue(t, spec{queue: "served", binds: bindings("c", 1)})
	}
	for done := 0; done < n; {
		ids := drainIDs(tk)
		require.NotEmpty(t, ids, "the served queue flows")
		tb.ack(t, ids...)
		done += len(ids)
	}
	w1, d1 := tb.e.Work()
	return w1 - w0, d1 - d0
}

// TestEngine_UnservedBacklogCostsNothing: jobs of a queue no taker serves
// are in no line, so the work of each decision for a served queue on the
// same budget does not grow with their number (issue: 40,000 unserved
// parked jobs made each decision 25 times slower).
func TestEngine_UnservedBacklogCostsNothing(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 10_000, 100_000}
	if testing.Short() {
		sizes = []int{0, 10_000}
	}
	var perDecision []float64
	for _, backlog := range sizes {
		examined, decisions := drainServed(t, backlog, 1000)
		require.Equal(t, uint64(1000), decisions)
		perDecision = append(perDecision, float64(examined)/float64(decisions))
	}
	for i, v := range perDecision {
		require.Equal(t, perDecision[0], v, "entries examined per decision with %d unserved jobs", sizes[i])
	}
}

// BenchmarkEngine_UnservedBacklog measures dispatch with an unserved
// backlog on the same budget (reported, never asserted).
func BenchmarkEngine_UnservedBacklog(b *testing.B) {
	for _, backlog := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("unserved=%d", backlog), func(b *testing.B) {
			tb := setup(b)
			tb.budget(b, "c", 4, store.WhileInFlight, 0, 0)
			for range backlog {
				tb.enqueue(b, spec{queue: "unserved", binds: bindings("c", 1)})
			}
			tk := tb.e.NewTaker([]string{"served"}, 8)
			b.ResetTimer()
			for range b.N {
				tb.enqueue(b, spec{queue: "served", binds: bindings("c", 1)})
				tb.ack(b, drainIDs(tk)...)
			}
		})
	}
}
