package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// Benchmarks over real HTTP against a real server and SQLite file, with the
// load generator in the same process (as on the 2-core target machine).
// They report jobs/s; nothing here is asserted.

func benchServer(b *testing.B, mode store.CommitMode) *testBundle {
	dir := b.TempDir()
	return setupTB(b, dir, func(o *server.Options) {
		o.OpenStore = servertest.Store(b, dir, sqlite.Options{DefaultMode: mode, EnqueueMode: mode})
	})
}

func postJSON(c *http.Client, url string, body []byte) (int, error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
	return resp.StatusCode, nil
}

func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
}

func BenchmarkEnqueue(b *testing.B) {
	for _, mode := range []store.CommitMode{store.Buffered, store.Fsync} {
		b.Run(mode.String(), func(b *testing.B) {
			tb := benchServer(b, mode)
			c := benchClient()
			body := []byte(`{"type":"bench","queue":"bench","payload":{"n":1}}`)
			b.SetParallelism(32)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if st, err := postJSON(c, tb.url+"/jobs", body); err != nil || st != 201 {
						b.Errorf("enqueue: %d %v", st, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

func BenchmarkEnqueueBulk(b *testing.B) {
	const perRequest = 100
	var buf bytes.Buffer
	buf.WriteString(`{"jobs":[`)
	for i := 0; i < perRequest; i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"type":"bench","queue":"bench","payload":{"n":%d}}`, i)
	}
	buf.WriteString(`]}`)
	body := buf.Bytes()
	for _, mode := range []store.CommitMode{store.Buffered, store.Fsync} {
		b.Run(mode.String(), func(b *testing.B) {
			tb := benchServer(b, mode)
			c := benchClient()
			b.SetParallelism(4)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if st, err := postJSON(c, tb.url+"/jobs/bulk", body); err != nil || st != 201 {
						b.Errorf("bulk enqueue: %d %v", st, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*perRequest)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

// worker takes jobs on a stream with prefetch and acknowledges them in
// batches with POST /jobs/success, the way the official clients do.
type worker struct {
	url      string
	c        *http.Client
	prefetch int
	queue    string // "": every queue
	onJob    func(id string)
}

func (w *worker) run(ctx context.Context) error {
	url := fmt.Sprintf("%s/jobs/take?prefetch=%d", w.url, w.prefetch)
	if w.queue != "" {
		url += "&queue=" + w.queue
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := w.c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	ids := make(chan string, w.prefetch)
	var acks sync.WaitGroup
	acks.Add(1)
	go func() { defer acks.Done(); w.ackLoop(ids) }()
	defer func() { close(ids); acks.Wait() }()
	frames := api.NewFrameReader(resp.Body, api.NDJSON)
	for {
		msg, err := frames.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(msg) == 0 {
			continue // heartbeat
		}
		var j struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(msg, &j); err != nil {
			return err
		}
		if w.onJob != nil {
			w.onJob(j.ID)
		}
		ids <- j.ID
	}
}

func (w *worker) ackLoop(ids <-chan string) {
	batch := make([]string, 0, 256)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		body, _ := json.Marshal(api.AckIDs{IDs: batch})
		_, _ = postJSON(w.c, w.url+"/jobs/success", body)
		batch = batch[:0]
	}
	for id := range ids {
		batch = append(batch, id)
		// Take what is already waiting, then acknowledge it all at once.
		for more := true; more && len(batch) < cap(batch); {
			select {
			case id, ok := <-ids:
				if !ok {
					more = false
					break
				}
				batch = append(batch, id)
			default:
				more = false
			}
		}
		flush()
	}
	flush()
}

func BenchmarkEndToEnd(b *testing.B) {
	for _, mode := range []store.CommitMode{store.Buffered, store.Fsync} {
		b.Run(mode.String(), func(b *testing.B) { benchEndToEnd(b, mode) })
	}
}

func benchEndToEnd(b *testing.B, mode store.CommitMode) {
	runThroughput(b, benchServer(b, mode), func(int) string {
		return `{"type":"bench","queue":"bench","payload":{"n":1}}`
	})
}

// BenchmarkIdleLatency measures enqueue-to-delivery latency to an idle
// worker: one job at a time.
func BenchmarkIdleLatency(b *testing.B) {
	tb := benchServer(b, store.Buffered)
	c := benchClient()
	arrived := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &worker{url: tb.url, c: c, prefetch: 1, onJob: func(string) { arrived <- time.Now() }}
	go func() { _ = w.run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	body := []byte(`{"type":"bench","queue":"bench","payload":{}}`)
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

// bulkBody returns a bulk enqueue body of the items item(first) to
// item(first+n-1).
func bulkBody(first, n int64, item func(int64) []byte) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"jobs":[`)
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(item(first + i))
	}
	buf.WriteString(`]}`)
	return buf.Bytes()
}

// enqueueLoad posts body(n) to path, n = 1, 2, … b.N, from par ×
// GOMAXPROCS clients of a fresh buffered server, and reports items a
// request over the elapsed time as unit. ok, when set, says which status
// request n must get (else 200 or 201).
func enqueueLoad(b *testing.B, par int, path string, items int, unit string, body func(n int64) []byte, ok func(n int64) int) {
	tb := benchServer(b, store.Buffered)
	c := benchClient()
	var next atomic.Int64
	b.SetParallelism(par)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			st, err := postJSON(c, tb.url+path, body(n))
			if err != nil || (st != 200 && st != 201) || (ok != nil && st != ok(n)) {
				b.Errorf("enqueue %s: %d %v", path, st, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N*items)/time.Since(start).Seconds(), unit)
}
