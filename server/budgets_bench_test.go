package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/store"
)

// Budget benchmarks over real HTTP (issue 3's goals). Figures are reported
// with b.ReportMetric; none is asserted.

func putBudget(b *testing.B, c *http.Client, url, key, body string) {
	req, _ := http.NewRequest("PUT", url+"/budgets/"+key, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("put budget %s: %v", key, err)
	}
	resp.Body.Close()
}

// runThroughput enqueues b.N jobs built by jobJSON in bulks and measures
// jobs/s until workers of every queue received them all.
func runThroughput(b *testing.B, tb *testBundle, jobJSON func(i int) string) float64 {
	return runThroughputOn(b, tb, "", jobJSON)
}

// runThroughputOn is runThroughput with workers of one queue ("": all).
func runThroughputOn(b *testing.B, tb *testBundle, queue string, jobJSON func(i int) string) float64 {
	c := benchClient()
	const workers, prefetch, bulk = 4, 256, 100
	var received atomic.Int64
	target := int64(b.N)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		w := &worker{url: tb.url + "", c: c, prefetch: prefetch, queue: queue, onJob: func(string) {
			if received.Add(1) == target {
				close(done)
			}
		}}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.run(ctx) }()
	}
	bodies := make([][]byte, 0, b.N/bulk+1)
	for i := 0; i < b.N; i += bulk {
		var buf bytes.Buffer
		buf.WriteString(`{"jobs":[`)
		for k := i; k < min(i+bulk, b.N); k++ {
			if k > i {
				buf.WriteByte(',')
			}
			buf.WriteString(jobJSON(k))
		}
		buf.WriteString(`]}`)
		bodies = append(bodies, buf.Bytes())
	}
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var pw sync.WaitGroup
	for p := 0; p < 4; p++ {
		pw.Add(1)
		go func() {
			defer pw.Done()
			for i := next.Add(1) - 1; i < int64(len(bodies)); i = next.Add(1) - 1 {
				if st, err := postJSON(c, tb.url+"/jobs/bulk", bodies[i]); err != nil || st != 201 {
					b.Errorf("enqueue: %d %v", st, err)
					return
				}
			}
		}()
	}
	elapsed := awaitJobs(b, done, &received, target, start)
	pw.Wait()
	cancel()
	wg.Wait()
	rate := float64(target) / elapsed.Seconds()
	b.ReportMetric(rate, "jobs/s")
	return rate
}

// awaitJobs waits until target jobs have arrived (done closed) and stops
// the timer; it returns the time since start.
func awaitJobs(b *testing.B, done <-chan struct{}, received *atomic.Int64, target int64, start time.Time) time.Duration {
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d jobs arrived", received.Load(), target)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	return elapsed
}

// BenchmarkBudgets_Generous: (a) every job bound to one of 1,000 budgets
// that never bind, against the same run without budgets.
func BenchmarkBudgets_Generous(b *testing.B) {
	b.Run("unbudgeted", func(b *testing.B) {
		tb := benchServer(b, store.Buffered)
		runThroughput(b, tb, func(int) string { return `{"type":"t","queue":"q","payload":{}}` })
	})
	b.Run("1000-budgets", func(b *testing.B) {
		tb := benchServer(b, store.Buffered)
		c := benchClient()
		for i := 0; i < 1000; i++ {
			putBudget(b, c, tb.url, fmt.Sprintf("g%d", i), `{"allocation":1000000,"strategy":{"type":"while_in_flight"}}`)
		}
		runThroughput(b, tb, func(i int) string {
			return fmt.Sprintf(`{"type":"t","queue":"q","payload":{},"budgets":[{"key":"g%d"}]}`, i%1000)
		})
	})
}

// BenchmarkBudgets_ParkedBacklog: (b) unbudgeted throughput while 100,000
// jobs are parked on 1,000 exhausted budgets.
func BenchmarkBudgets_ParkedBacklog(b *testing.B) {
	tb := benchServer(b, store.Buffered)
	c := benchClient()
	for i := 0; i < 1000; i++ {
		putBudget(b, c, tb.url, fmt.Sprintf("x%d", i), `{"allocation":1,"strategy":{"type":"time_based","duration_ms":86400000,"burst":1}}`)
	}
	// Exhaust every budget: one job each goes to a worker that never acks.
	parked := 100_000
	for i := 0; i < parked+1000; i += 1000 {
		var buf bytes.Buffer
		buf.WriteString(`{"jobs":[`)
		for k := 0; k < 1000; k++ {
			if k > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, `{"type":"t","queue":"slow","payload":{},"budgets":[{"key":"x%d"}]}`, k)
		}
		buf.WriteString(`]}`)
		if st, err := postJSON(c, tb.url+"/jobs/bulk", buf.Bytes()); err != nil || st != 201 {
			b.Fatalf("backlog: %d %v", st, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder, _ := http.NewRequestWithContext(ctx, "GET", tb.url+"/jobs/take?prefetch=0&queue=slow", nil)
	go func() {
		if resp, err := c.Do(holder); err == nil {
			defer resp.Body.Close()
			_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
		}
	}()
	runThroughputQueue(b, tb, "fast")
}

func runThroughputQueue(b *testing.B, tb *testBundle, queue string) {
	runThroughput(b, &testBundle{url: tb.url + "", srv: tb.srv}, func(int) string {
		return `{"type":"t","queue":"` + queue + `","payload":{}}`
	})
}

// BenchmarkBudgets_Pacing: (c) token-to-dispatch lateness against the ideal
// schedule and (d) achieved rate under a standing backlog, for a
// time_based budget at 100/s and 1,000/s with its default burst (one
// second's worth). b.N is ignored: each run takes about 10 s of real time.
//
// (With burst 1 the window bound, at most 1 + rate·W in any window W,
// forbids catching up after a late wake-up, so any timer lateness is lost
// by definition; the default burst lets the schedule absorb it.)
func BenchmarkBudgets_Pacing(b *testing.B) {
	for _, rate := range []int{100, 1000} {
		b.Run(fmt.Sprintf("%d-per-s", rate), func(b *testing.B) {
			tb := setupTB(b, b.TempDir(), func(o *server.Options) { o.Engine.GlobalInFlightLimit = 0 })
			c := benchClient()
			putBudget(b, c, tb.url, "pace", fmt.Sprintf(`{"allocation":%d,"strategy":{"type":"time_based","duration_ms":1000}}`, rate))
			total := rate * 11 // the full pool, then 10 s of drip
			for i := 0; i < total; i += 1000 {
				var buf bytes.Buffer
				buf.WriteString(`{"jobs":[`)
				for k := i; k < min(i+1000, total); k++ {
					if k > i {
						buf.WriteByte(',')
					}
					buf.WriteString(`{"type":"t","queue":"q","payload":{},"budgets":[{"key":"pace"}]}`)
				}
				buf.WriteString(`]}`)
				if st, err := postJSON(c, tb.url+"/jobs/bulk", buf.Bytes()); err != nil || st != 201 {
					b.Fatalf("backlog: %d %v", st, err)
				}
			}
			// The backlog was enqueued before the first token after the
			// initial one: wait for a fresh schedule by reading from now.
			arrivals := make([]time.Time, 0, total)
			var mu sync.Mutex
			done := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := &worker{url: tb.url, c: c, prefetch: 0, onJob: func(string) {
				mu.Lock()
				defer mu.Unlock()
				arrivals = append(arrivals, time.Now())
				if len(arrivals) == total {
					close(done)
				}
			}}
			go func() { _ = w.run(ctx) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				b.Fatalf("only %d of %d arrived", len(arrivals), total)
			}
			mu.Lock()
			defer mu.Unlock()
			// The pool is full when the worker connects: the first `rate`
			// jobs go at once, then job k is due (k-rate+1) periods later,
			// on the budget's own schedule. The client cannot see the
			// server's clock, so the schedule is aligned to the least late
			// arrival: lateness is what deliveries add beyond that.
			period := time.Second / time.Duration(rate)
			due := func(k int) time.Duration {
				if k < rate {
					return 0
				}
				return time.Duration(k-rate+1) * period
			}
			// Lateness is measured on the drip only, after a second of
			// warm-up: the burst's frames are all due at once and the first
			// drip frames queue behind them on the stream.
			first := 2 * rate
			drip := arrivals[first:]
			offset := time.Duration(1 << 62)
			for i, at := range drip {
				offset = min(offset, at.Sub(arrivals[0])-due(first+i))
			}
			late := make([]time.Duration, 0, len(drip))
			for i, at := range drip {
				late = append(late, at.Sub(arrivals[0])-due(first+i)-offset)
			}
			sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
			q := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))].Microseconds()) / 1000 }
			// Rate over the drip, after the initial burst.
			achieved := float64(total-rate) / arrivals[total-1].Sub(arrivals[rate-1]).Seconds()
			b.ReportMetric(q(0.5), "late-p50-ms")
			b.ReportMetric(q(0.99), "late-p99-ms")
			b.ReportMetric(100*achieved/float64(rate), "%-of-rate")
		})
	}
}

// fillQueue enqueues n jobs of queue bound to budget key, in bulks.
func fillQueue(b *testing.B, c *http.Client, url, queue, key string, n int) {
	for i := 0; i < n; i += 1000 {
		var buf bytes.Buffer
		buf.WriteString(`{"jobs":[`)
		for k := i; k < min(i+1000, n); k++ {
			if k > i {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, `{"type":"t","queue":%q,"payload":{},"budgets":[{"key":%q}]}`, queue, key)
		}
		buf.WriteString(`]}`)
		if st, err := postJSON(c, url+"/jobs/bulk", buf.Bytes()); err != nil || st != 201 {
			b.Fatalf("backlog: %d %v", st, err)
		}
	}
}

// BenchmarkBudgets_UnservedBacklog: dispatch throughput, and enqueue-to-frame
// latency of an idle worker, for a served queue whose jobs share a budget
// with 0, 10,000 or 100,000 jobs of a queue no worker serves (issue 11:
// those jobs must cost nothing; goal: within 10% of none).
func BenchmarkBudgets_UnservedBacklog(b *testing.B) {
	for _, backlog := range []int{0, 10_000, 100_000} {
		b.Run(fmt.Sprintf("unserved=%d/throughput", backlog), func(b *testing.B) {
			tb := benchServer(b, store.Buffered)
			c := benchClient()
			putBudget(b, c, tb.url, "shared", `{"allocation":512,"strategy":{"type":"while_in_flight"}}`)
			fillQueue(b, c, tb.url, "unserved", "shared", backlog)
			runThroughputOn(b, tb, "q", func(int) string {
				return `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"shared"}]}`
			})
		})
		b.Run(fmt.Sprintf("unserved=%d/latency", backlog), func(b *testing.B) {
			tb := benchServer(b, store.Buffered)
			c := benchClient()
			putBudget(b, c, tb.url, "shared", `{"allocation":512,"strategy":{"type":"while_in_flight"}}`)
			fillQueue(b, c, tb.url, "unserved", "shared", backlog)
			body := []byte(`{"type":"t","queue":"q","payload":{},"budgets":[{"key":"shared"}]}`)
			measureIdleLatency(b, tb, c, "q", body)
		})
	}
}

// measureIdleLatency enqueues b.N jobs one at a time for an idle worker of
// queue and reports enqueue-to-frame p50 and p99.
func measureIdleLatency(b *testing.B, tb *testBundle, c *http.Client, queue string, body []byte) {
	arrived := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &worker{url: tb.url, c: c, prefetch: 1, queue: queue, onJob: func(string) { arrived <- time.Now() }}
	go func() { _ = w.run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if st, err := postJSON(c, tb.url+"/jobs", body); err != nil || st != 201 {
			b.Fatalf("enqueue: %d %v", st, err)
		}
		lat = append(lat, (<-arrived).Sub(start))
		time.Sleep(time.Millisecond) // let the ack land: the worker is idle again
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
