package server_test

import (
	"fmt"
	"testing"
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
			return bulkBody(n*100, 100, func(i int64) []byte { return item("k", i) })
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			enqueueLoad(b, 32, tc.path, tc.items, "items/s", tc.body, nil)
		})
	}
}
