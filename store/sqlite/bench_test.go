package sqlite

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zizq/zizq/store"
)

// benchJob returns a job with a payload of typical size.
func benchJob(n int64) store.Job {
	return store.Job{
		ID: fmt.Sprintf("0bench%019d", n), Type: "send_email", Queue: "emails", Priority: 32768,
		Status: store.Ready, ReadyAt: 1_700_000_000_000 + n,
		Payload: []byte(`{"to":"user@example.com","subject":"Welcome aboard","template":"welcome","locale":"en","user_id":123456}`),
	}
}

// BenchmarkInsert enqueues one job per group from many goroutines, each
// waiting for its commit: the shape of concurrent POST /jobs.
func BenchmarkInsert(b *testing.B) {
	for _, mode := range []store.CommitMode{store.Buffered, store.Fsync} {
		b.Run(mode.String(), func(b *testing.B) {
			t := setup(b, func(o *Options) { o.DefaultMode, o.EnqueueMode = mode, mode })
			var next atomic.Int64
			b.SetParallelism(64) // 64 × GOMAXPROCS waiting clients
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := t.db.Append(store.InsertJob(benchJob(next.Add(1)))).Wait(t.ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
			b.ReportMetric(float64(b.N)/float64(t.db.txs.Load()), "groups/tx")
		})
	}
}

// BenchmarkInsertBulk enqueues groups of 100 jobs (POST /jobs/bulk) from a
// few goroutines.
func BenchmarkInsertBulk(b *testing.B) {
	const size = 100
	for _, mode := range []store.CommitMode{store.Buffered, store.Fsync} {
		b.Run(mode.String(), func(b *testing.B) {
			t := setup(b, func(o *Options) { o.DefaultMode, o.EnqueueMode = mode, mode })
			var next atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ops := make([]store.Op, size)
				for pb.Next() {
					for i := range ops {
						ops[i] = store.InsertJob(benchJob(next.Add(1)))
					}
					if err := t.db.Append(ops...).Wait(t.ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

// BenchmarkLifecycle runs a job's whole life through the store, as the
// engine appends it: insert, in-flight mark (not waited), completion
// (delete, waited).
func BenchmarkLifecycle(b *testing.B) {
	t := setup(b)
	var next atomic.Int64
	b.SetParallelism(64)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			j := benchJob(n)
			if err := t.db.Append(store.InsertJob(j)).Wait(t.ctx); err != nil {
				b.Error(err)
				return
			}
			t.db.Append(store.SetStatus(j.ID, store.InFlight, 1))
			if err := t.db.Append(store.DeleteJob(j.ID)).Wait(t.ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
