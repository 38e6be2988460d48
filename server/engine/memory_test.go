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

// nullJournal drops what the engine journals.
type nullJournal struct{}

func (nullJournal) Append(...store.Op) Waiter { return done{} }

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkEngine_MemoryPerJob reports the engine's live heap per queued job
// (issue 12: at most 100 bytes a job beyond its bindings), for jobs without
// budgets and for jobs parked on one budget. b.N is ignored.
func BenchmarkEngine_MemoryPerJob(b *testing.B) {
	const n = 1_000_000
	for _, bound := range []bool{false, true} {
		b.Run(fmt.Sprintf("budgeted=%v", bound), func(b *testing.B) {
			clk := clock.NewFake(epoch)
			e := New(DefaultConfig(), clk, nullJournal{}, jobid.New(clk.Now))
			var binds []BindingSpec
			if bound {
				_, _, _ = e.PutBudget("b", store.Budget{Allocation: 1, Strategy: store.TimeBased, DurationMs: 86_400_000}, CreateOnly)
				binds = []BindingSpec{{Key: "b", Cost: 1}}
				e.NewTaker(nil, 1) // served: the jobs are parked, not just waiting
			}
			before := liveHeap()
			batch := make([]NewJob, 1000)
			for i := range batch {
				batch[i] = NewJob{Type: "t", Queue: "q", Priority: 32768, Payload: []byte(`{}`), Budgets: binds}
			}
			for done := 0; done < n; done += len(batch) {
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
			after := liveHeap()
			b.ReportMetric(float64(after-before)/n, "B/job")
			runtime.KeepAlive(e)
		})
	}
}
