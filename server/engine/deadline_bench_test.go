package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
)

// BenchmarkEngine_Deadlines measures dispatch (enqueue, take and ack, a job
// an op, in batches of 1,000) beside 100,000 waiting jobs of a queue no
// taker serves: without start_by ("none"), and with one each, 100,000
// pending deadlines in the heap ("pending"). The goal is within 5% (issue
// 26 §3; reported, never asserted). "dispatched-own" gives the dispatched
// jobs a start_by of their own too, which every enqueue pushes and every
// ack leaves stale in the lazy heap: what a job with a deadline costs.
func BenchmarkEngine_Deadlines(b *testing.B) {
	const backlog = 100_000
	for _, tc := range []struct {
		name               string
		pending, ownStarts bool
	}{{"none", false, false}, {"pending", true, false}, {"dispatched-own", true, true}} {
		b.Run(fmt.Sprintf("%s/backlog=%d", tc.name, backlog), func(b *testing.B) {
			clk := clock.NewFake(epoch)
			e := New(DefaultConfig(), clk, nullJournal{}, jobid.New(clk.Now))
			far := epoch.Add(24 * time.Hour).UnixMilli()
			start := func(on bool) int64 {
				if on {
					return far
				}
				return 0
			}
			wait := make([]NewJob, 1000)
			for i := range wait {
				wait[i] = NewJob{Type: "t", Queue: "unserved", Priority: 32768, Payload: []byte(`{}`), StartBy: start(tc.pending)}
			}
			for range backlog / len(wait) {
				enqueueAdmitted(b, e, wait)
			}
			tk := e.NewTaker([]string{"q"}, 64)
			batch := make([]NewJob, 1000)
			for i := range batch {
				batch[i] = NewJob{Type: "t", Queue: "q", Priority: 32768, Payload: []byte(`{}`), StartBy: start(tc.ownStarts)}
			}
			b.ResetTimer()
			for done := 0; done < b.N; done += len(batch) {
				enqueueAdmitted(b, e, batch)
				for n := 0; n < len(batch); {
					jobs := tk.Drain(nil)
					if len(jobs) == 0 {
						b.Fatal("the jobs stopped flowing")
					}
					ids := make([]string, len(jobs))
					for i, j := range jobs {
						ids[i] = j.ID
					}
					e.Ack(ids)
					n += len(ids)
				}
				clk.Advance(time.Millisecond)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// enqueueAdmitted enqueues specs and admits them.
func enqueueAdmitted(b *testing.B, e *Engine, specs []NewJob) {
	jobs, _, err := e.Enqueue(specs)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	e.Admit(ids)
}
