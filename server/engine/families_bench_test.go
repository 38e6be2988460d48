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

// backlogEngine parks n jobs on one budget that lets 8 run at once: a plain
// one, or a family of the same limit whose jobs spread over keys sub-keys
// (one each in flight). It returns the engine, a served taker and the live
// heap the jobs took.
func backlogEngine(b *testing.B, n, keys int) (*Engine, *Taker, uint64) {
	clk := clock.NewFake(epoch)
	e := New(DefaultConfig(), clk, nullJournal{}, jobid.New(clk.Now))
	own := store.Budget{Allocation: 8, Strategy: store.WhileInFlight}
	if keys > 0 {
		own.PerKey = &store.BudgetTemplate{Allocation: 1, Strategy: store.WhileInFlight}
	}
	if _, _, err := e.PutBudget("c", own, CreateOnly); err != nil {
		b.Fatal(err)
	}
	before := liveHeap()
	batch := make([]NewJob, 1000)
	for done := 0; done < n; done += len(batch) {
		for i := range batch {
			key := "c"
			if keys > 0 {
				key = fmt.Sprintf("c/k%d", (done+i)%keys)
			}
			batch[i] = NewJob{Type: "t", Queue: "q", Priority: 32768, Payload: []byte(`{}`), Budgets: []BindingSpec{{Key: key, Cost: 1}}}
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
	tk := e.NewTaker([]string{"q"}, 8)
	return e, tk, liveHeap() - before
}

// BenchmarkEngine_FamilyBacklog measures dispatch (take and ack, a job an
// op) from a million parked jobs on one plain budget against the same jobs
// spread over 10,000 live sub-budgets of a family (issue 16: within 20%, in
// throughput and in memory; reported, never asserted). 10 and 1,000
// sub-budgets beside them show how the family's extra time grows with the
// memory its many groups and accounts span rather than with its work. A
// b.N past a million gets a backlog of its size.
func BenchmarkEngine_FamilyBacklog(b *testing.B) {
	for _, keys := range []int{0, 10, 1000, 10_000} {
		b.Run(fmt.Sprintf("subkeys=%d", keys), func(b *testing.B) {
			n := max(1_000_000, b.N+8)
			n += (1000 - n%1000) % 1000 // whole bulks
			e, tk, heap := backlogEngine(b, n, keys)
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
			b.ReportMetric(float64(heap)/float64(n), "B/job")
			runtime.KeepAlive(e)
		})
	}
}
