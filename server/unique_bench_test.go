package server_test

import (
	"fmt"
	"testing"
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
			enqueueLoad(b, 32, "/jobs", 1, "jobs/s", tc.body, tc.ok)
		})
	}
}

// BenchmarkEnqueueBulkUnique is the same in bulk requests of 100.
func BenchmarkEnqueueBulkUnique(b *testing.B) {
	const perRequest = 100
	for _, tc := range uniqueBenchCases {
		b.Run(tc.name, func(b *testing.B) {
			enqueueLoad(b, 4, "/jobs/bulk", perRequest, "jobs/s", func(n int64) []byte {
				return bulkBody((n-1)*perRequest, perRequest, tc.body)
			}, nil)
		})
	}
}
