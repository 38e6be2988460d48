package engine

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// weightedKeys gives each of n sub-keys "k<i>" a weight of 1 to 4, and
// every fourth an allocation override of the template's own 1; none when
// weighted is false.
func weightedKeys(n int, weighted bool) map[string]store.KeyOverride {
	if !weighted {
		return nil
	}
	keys := make(map[string]store.KeyOverride, n)
	for i := range n {
		o := store.KeyOverride{Weight: int64(1 + i%4)}
		if i%4 == 0 {
			o.Allocation = 1
		}
		keys[fmt.Sprintf("k%d", i)] = o
	}
	return keys
}

// weightedEngine is backlogEngine's family with overrides for its keys.
func weightedEngine(b *testing.B, keys int, overrides map[string]store.KeyOverride) (*Engine, *clock.Fake) {
	clk := clock.NewFake(epoch)
	e := New(DefaultConfig(), clk, nullJournal{}, jobid.New(clk.Now))
	own := store.Budget{Allocation: 8, Strategy: store.WhileInFlight, Keys: overrides,
		PerKey: &store.BudgetTemplate{Allocation: 1, Strategy: store.WhileInFlight}}
	if _, _, err := e.PutBudget("c", own, CreateOnly); err != nil {
		b.Fatal(err)
	}
	return e, clk
}

// enqueueSpread enqueues n jobs in bulks of 1000, spread over keys
// sub-keys of family "c", starting at job number from.
func enqueueSpread(b *testing.B, e *Engine, clk *clock.Fake, from, n, keys int) {
	batch := make([]NewJob, 1000)
	for done := 0; done < n; done += len(batch) {
		for i := range batch {
			batch[i] = NewJob{Type: "t", Queue: "q", Priority: 32768, Payload: []byte(`{}`),
				Budgets: []BindingSpec{{Key: fmt.Sprintf("c/k%d", (from+done+i)%keys), Cost: 1}}}
		}
		jobs, _, err := e.Enqueue(batch)
		if err != nil {
			b.Fatal(err)
		}
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		e.Admit(ids)
		clk.Advance(time.Millisecond)
	}
}

// BenchmarkEngine_FamilyWeights measures dispatch (take and ack, a job an
// op) from a million parked jobs over 10,000 live sub-budgets of a family,
// with every key weighted (issue 26: within 10% of the unweighted family;
// reported, never asserted), as BenchmarkEngine_FamilyBacklog does.
func BenchmarkEngine_FamilyWeights(b *testing.B) {
	const keys = 10_000
	for _, weighted := range []bool{false, true} {
		b.Run(fmt.Sprintf("weighted=%v", weighted), func(b *testing.B) {
			n := max(1_000_000, b.N+8)
			n += (1000 - n%1000) % 1000
			e, clk := weightedEngine(b, keys, weightedKeys(keys, weighted))
			enqueueSpread(b, e, clk, 0, n, keys)
			tk := e.NewTaker([]string{"q"}, 8)
			b.ResetTimer()
			for done := 0; done < b.N; {
				jobs := tk.Drain(nil)
				if len(jobs) == 0 {
					b.Fatal("the backlog stopped flowing")
				}
				ids := make([]string, len(jobs))
				for i, j := range jobs {
					ids[i] = j.ID
				}
				if missing, _ := e.Ack(ids); len(missing) > 0 {
					b.Fatal("ack missed", missing)
				}
				done += len(ids)
			}
			b.StopTimer()
			runtime.KeepAlive(e)
		})
	}
}

// BenchmarkEngine_FamilyWeightsEnqueue measures the enqueue of jobs (a
// job an op, in bulks of 1000) spread over 10,000 sub-keys, weighted or
// not: the weights cost a division at each job's tag.
func BenchmarkEngine_FamilyWeightsEnqueue(b *testing.B) {
	const keys = 10_000
	for _, weighted := range []bool{false, true} {
		b.Run(fmt.Sprintf("weighted=%v", weighted), func(b *testing.B) {
			e, clk := weightedEngine(b, keys, weightedKeys(keys, weighted))
			n := b.N + (1000-b.N%1000)%1000
			b.ResetTimer()
			enqueueSpread(b, e, clk, 0, n, keys)
			b.StopTimer()
			runtime.KeepAlive(e)
		})
	}
}
