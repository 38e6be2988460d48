package sqlite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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
					var at int64 // one enqueue stamps its jobs with one moment
					for i := range ops {
						j := benchJob(next.Add(1))
						if i == 0 {
							at = j.ReadyAt
						}
						j.ReadyAt = at
						ops[i] = store.InsertJob(j)
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

// benchJobs is the number of jobs BenchmarkLoad and BenchmarkGetJobs fill
// their store with: 1,000,000 (the backlog), fewer with -short.
func benchJobs() int {
	if testing.Short() {
		return 50_000
	}
	return 1_000_000
}

// fillBench fills a store with n ready jobs as a backlog looks: ten
// queues, the given number of priorities, every other job bound to one or
// two budgets, 120-byte payloads. It then closes and reopens the store, as a restart
// does, so that reads start from a checkpointed file, not from a WAL the
// writer is still checkpointing.
func fillBench(b *testing.B, n, priorities int) *testBundle {
	b.Helper()
	dir := b.TempDir()
	db, err := Open(context.Background(), dir, quiet())
	if err != nil {
		b.Fatal(err)
	}
	fillInto(b, &testBundle{db: db, dir: dir, ctx: context.Background()}, n, priorities)
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	if db, err = Open(context.Background(), dir, quiet()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return &testBundle{db: db, dir: dir, ctx: context.Background()}
}

func fillInto(b testing.TB, t *testBundle, n, priorities int) {
	const group = 1000
	var ps []store.Pending
	for start := 0; start < n; start += group {
		ops := make([]store.Op, 0, group)
		for i := start; i < min(n, start+group); i++ {
			j := benchJob(int64(i))
			j.Queue = fmt.Sprint("queue-", i%10)
			j.Priority = uint16(16384 * (1 + i%priorities))
			switch i % 4 {
			case 1:
				j.Budgets = []store.Binding{{Key: "api-eu", Cost: 1}}
			case 3:
				j.Budgets = []store.Binding{{Key: "api-eu", Cost: 2}, {Key: "hourly", Cost: 1}}
			}
			ops = append(ops, store.InsertJob(j))
		}
		ps = append(ps, t.db.Append(ops...))
	}
	for _, p := range ps {
		if err := p.Wait(t.ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad reads a backlog of live jobs the way the engine starts:
// one pass, no payloads, in (priority, id) order; with one priority (the
// common backlog) and three.
func BenchmarkLoad(b *testing.B) {
	n := benchJobs()
	for _, priorities := range []int{1, 3} {
		b.Run(fmt.Sprint("Priorities=", priorities), func(b *testing.B) {
			t := fillBench(b, n, priorities)
			start := time.Now()
			for b.Loop() {
				rows := 0
				err := t.db.Load(t.ctx, store.Loader{Job: func(store.LiveJob) error { rows++; return nil }})
				if err != nil || rows != n {
					b.Fatal(rows, err)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// BenchmarkGetJobs looks up whole jobs, payloads included, 256 at a time,
// and what a dispatch reads back of them (Payloads: payload and
// failed_at): in dispatch order, and at random.
func BenchmarkGetJobs(b *testing.B) {
	const batch = 256
	n := benchJobs()
	t := fillBench(b, n, 3)
	var ordered []string
	err := t.db.Load(t.ctx, store.Loader{Job: func(j store.LiveJob) error { ordered = append(ordered, j.ID); return nil }})
	if err != nil {
		b.Fatal(err)
	}
	shuffled := slices.Clone(ordered)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for name, ids := range map[string][]string{"DispatchOrder": ordered, "Random": shuffled} {
		b.Run(name, func(b *testing.B) {
			rows, at := 0, 0
			start := time.Now()
			for b.Loop() {
				if at+batch > len(ids) {
					at = 0
				}
				jobs, err := t.db.GetJobs(t.ctx, ids[at:at+batch])
				if err != nil || len(jobs) != batch {
					b.Fatal(len(jobs), err)
				}
				rows += len(jobs)
				at += batch
			}
			b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
		})
		b.Run("Payloads/"+name, func(b *testing.B) {
			rows, at := 0, 0
			start := time.Now()
			for b.Loop() {
				if at+batch > len(ids) {
					at = 0
				}
				got, err := t.db.Payloads(t.ctx, ids[at:at+batch])
				if err != nil || len(got) != batch {
					b.Fatal(len(got), err)
				}
				rows += len(got)
				at += batch
			}
			b.ReportMetric(float64(rows)/time.Since(start).Seconds(), "rows/s")
		})
	}
}

// BenchmarkDrain drains a backlog of b.N jobs through the store as take
// streams with batched acks do: each group of 100 is read back (payloads),
// marked in flight (not waited), then deleted (waited). The backlog is
// filled before the timer starts.
func BenchmarkDrain(b *testing.B) {
	const group = 100
	t := setup(b)
	fillInto(b, t, b.N, 1)
	b.ResetTimer()
	start := time.Now()
	var last store.Pending
	for first := 0; first < b.N; first += group {
		ids := make([]string, 0, group)
		marks := make([]store.Op, 0, group)
		dels := make([]store.Op, 0, group)
		for i := first; i < min(b.N, first+group); i++ {
			id := benchJob(int64(i)).ID
			ids = append(ids, id)
			marks = append(marks, store.SetStatus(id, store.InFlight, 1))
			dels = append(dels, store.DeleteJob(id))
		}
		if _, err := t.db.Payloads(t.ctx, ids); err != nil {
			b.Fatal(err)
		}
		t.db.Append(marks...)
		if last != nil {
			if err := last.Wait(t.ctx); err != nil {
				b.Fatal(err)
			}
		}
		last = t.db.Append(dels...)
	}
	if err := last.Wait(t.ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
