package worker

import (
	"context"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server/servertest"
)

// BenchmarkWorker_True drains b.N jobs whose command is `true`, at each
// concurrency, against an in-process server: the cost of a job beyond
// its process (compare a shell loop of true; BENCHMARKS.md).
func BenchmarkWorker_True(b *testing.B) {
	for _, c := range []int{1, 8, 64} {
		b.Run("Concurrency"+strconv.Itoa(c), func(b *testing.B) {
			ctx := context.Background()
			cl, err := client.New(servertest.Start(b).URL, client.Options{})
			require.NoError(b, err)
			reqs := make([]api.EnqueueRequest, 0, 1000)
			for left := b.N; left > 0; left -= len(reqs) {
				reqs = reqs[:0]
				for range min(left, 1000) {
					reqs = append(reqs, api.EnqueueRequest{Queue: api.Ptr("b"), Type: api.Ptr("t"), Payload: api.Payload("{}")})
				}
				_, err := cl.EnqueueBulk(ctx, reqs)
				require.NoError(b, err)
			}
			w := New(Config{Client: cl, Queues: []string{"b"}, Concurrency: c, Drain: true, Command: []string{"true"},
				Env: os.Environ(), Events: TextEvents(io.Discard, 0), Output: io.Discard})
			b.ResetTimer()
			require.NoError(b, w.Run(ctx))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
