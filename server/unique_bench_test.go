package server_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zizq/zizq/store"
)

// uniqueBenchCases are the enqueues BenchmarkEnqueueUnique compares: no
// key, a new key every time, every key twice (the second a duplicate,
// answered 200 without creating anything), and a thousand keys over and
// over. n numbers the requests.
var uniqueBenchCases = []struct {
	name string
	body func(n int64) []byte
	ok   func(n int64) int
}{
	{"Plain", func(n int64) []byte {
		return fmt.Appendf(nil, `{"type":"bench","queue":"bench","payload":{"n":%d}}`, n)
	}, func(int64) int { return 201 }},
	{"DistinctKeys", func(n int64) []byte {
		return fmt.Appendf(nil, `{"type":"bench","queue":"bench","payload":{"n":%d},"unique_key":"k%d"}`, n, n)
	}, func(int64) int { return 201 }},
	{"HalfDuplicates", func(n int64) []byte {
		return fmt.Appendf(nil, `{"type":"bench","queue":"bench","payload":{"n":%d},"unique_key":"k%d"}`, n, n/2)
	}, nil}, // either: the pair's two requests race
	{"RepeatedKeys", func(n int64) []byte {
		return fmt.Appendf(nil, `{"type":"bench","queue":"bench","payload":{"n":%d},"unique_key":"k%d"}`, n, n%1000)
	}, nil}, // after the first thousand, duplicates of jobs enqueued a while ago
}

// BenchmarkEnqueueUnique measures single enqueues (POST /jobs) with unique
// keys against plain ones, buffered, with no worker taking the jobs.
func BenchmarkEnqueueUnique(b *testing.B) {
	for _, tc := range uniqueBenchCases {
		b.Run(tc.name, func(b *testing.B) {
			tb := benchServer(b, store.Buffered)
			c := benchClient()
			var seq atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					st, err := postJSON(c, tb.url+"/jobs", tc.body(n))
					if err != nil || (st != 201 && st != 200) || (tc.ok != nil && st != tc.ok(n)) {
						b.Errorf("enqueue: %d %v", st, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}

// BenchmarkEnqueueBulkUnique is the same in bulk requests of 100.
func BenchmarkEnqueueBulkUnique(b *testing.B) {
	const perRequest = 100
	for _, tc := range uniqueBenchCases {
		b.Run(tc.name, func(b *testing.B) {
			tb := benchServer(b, store.Buffered)
			c := benchClient()
			var seq atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				var buf bytes.Buffer
				for pb.Next() {
					first := seq.Add(perRequest) - perRequest
					buf.Reset()
					buf.WriteString(`{"jobs":[`)
					for i := range int64(perRequest) {
						if i > 0 {
							buf.WriteByte(',')
						}
						buf.Write(tc.body(first + i))
					}
					buf.WriteString(`]}`)
					if st, err := postJSON(c, tb.url+"/jobs/bulk", buf.Bytes()); err != nil || (st != 201 && st != 200) {
						b.Errorf("bulk enqueue: %d %v", st, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*perRequest)/time.Since(start).Seconds(), "jobs/s")
		})
	}
}
