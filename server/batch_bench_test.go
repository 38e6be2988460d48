package server_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zizq/zizq/store"
)

// BenchmarkEnqueueFolds compares enqueues of batched items with plain
// ones, over real HTTP (32 clients, buffered commits): items that fold into
// one batch key (decided one enqueue at a time), into 64 keys, items of
// keys of their own (a dry run each, no fold), and bulks of 100 folds. A
// batch seals at 100 items, so payloads stay small.
func BenchmarkEnqueueFolds(b *testing.B) {
	item := func(key string, n int64) []byte {
		return fmt.Appendf(nil, `{"type":"bench","queue":"bench","payload":[%d],"batch":{"key":%q,`+
			`"when":"(($existing | .) + ($new | .)) | length <= 100","fold":"$existing | . += ($new | .)"}}`, n, key)
	}
	for _, tc := range []struct {
		name  string
		path  string
		items int
		body  func(n int64) []byte
	}{
		{"Plain", "/jobs", 1, func(n int64) []byte { return fmt.Appendf(nil, `{"type":"bench","queue":"bench","payload":[%d]}`, n) }},
		{"OneKey", "/jobs", 1, func(n int64) []byte { return item("k", n) }},
		{"64Keys", "/jobs", 1, func(n int64) []byte { return item(fmt.Sprint("k", n%64), n) }},
		{"KeyEach", "/jobs", 1, func(n int64) []byte { return item(fmt.Sprint("k", n), n) }},
		{"Bulk100OneKey", "/jobs/bulk", 100, func(n int64) []byte {
			var buf bytes.Buffer
			buf.WriteString(`{"jobs":[`)
			for i := range int64(100) {
				if i > 0 {
					buf.WriteByte(',')
				}
				buf.Write(item("k", n*100+i))
			}
			buf.WriteString(`]}`)
			return buf.Bytes()
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tb := benchServer(b, store.Buffered)
			c := benchClient()
			var next atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					st, err := postJSON(c, tb.url+tc.path, tc.body(next.Add(1)))
					if err != nil || (st != 200 && st != 201) {
						b.Errorf("enqueue: %d %v", st, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*tc.items)/time.Since(start).Seconds(), "items/s")
		})
	}
}
