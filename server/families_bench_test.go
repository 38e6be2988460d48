package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store"
)

// BenchmarkFamilies_Backlog is issue 16's measure over real HTTP: a backlog
// of 1,000,000 jobs (more when b.N is larger) on a budget that lets 64 run
// at once, plain or a family whose jobs spread over 10,000 sub-keys (one
// each in flight; round robin or at random), unweighted or with weights 1
// to 4 (issue 26), then b.N of them drained by 4 take streams that ack
// each job. Reported, never
// asserted; BenchmarkEngine_FamilyBacklog and BenchmarkEngine_FamilyWeights
// are the engine's own part of it.
func BenchmarkFamilies_Backlog(b *testing.B) {
	for _, v := range []struct {
		keys             int
		weighted, random bool
	}{{0, false, false}, {10_000, false, false}, {10_000, true, false}, {10_000, false, true}, {10_000, true, true}} {
		keys := v.keys
		name := fmt.Sprintf("subkeys=%d", keys)
		if v.random {
			name += "/random"
		}
		if v.weighted {
			name += "/weights=1-4"
		}
		b.Run(name, func(b *testing.B) {
			tb := benchServer(b, store.Buffered)
			c := benchClient()
			body := `{"allocation":64,"strategy":{"type":"while_in_flight"}}`
			if keys > 0 {
				body = `{"allocation":64,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"while_in_flight"}}` +
					weightOverrides(keys, v.weighted) + `}`
			}
			putBudget(b, c, tb.url, "c", body)
			n := max(1_000_000, b.N)
			subKey := subKeys(n, keys, v.random)
			fillBacklog(b, tb, n, func(i int) string {
				if keys == 0 {
					return `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"c"}]}`
				}
				return fmt.Sprintf(`{"type":"t","queue":"q","payload":{},"budgets":[{"key":"c/k%d"}]}`, subKey[i])
			})
			drainBacklog(b, tb, "q")
		})
	}
}

// subKeys gives each of the backlog's n jobs its sub-key, of keys: round
// robin (then the unweighted dispatch order is the enqueue order), or drawn
// at random from a fixed seed, as tenants that enqueue independently
// arrive. Drawn before the fill, whose producers run at once, so that the
// draw does not depend on which of them asks first; none without keys.
func subKeys(n, keys int, random bool) []int {
	if keys == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(26, 1))
	out := make([]int, n)
	for i := range out {
		out[i] = i % keys
		if random {
			out[i] = rng.IntN(keys)
		}
	}
	return out
}

// weightOverrides is a family body's "keys" member giving sub-key k<i>
// the weight 1 + i%4, the engine's BenchmarkEngine_FamilyWeights weights
// (without its allocation overrides), or nothing.
func weightOverrides(keys int, weighted bool) string {
	if !weighted {
		return ""
	}
	o := make(api.KeyOverrides, keys)
	for i := range keys {
		o[fmt.Sprintf("k%d", i)] = api.KeyOverride{Weight: int64(1 + i%4)}
	}
	js, err := json.Marshal(o)
	if err != nil {
		panic(err) // a map of plain structs always encodes
	}
	return `,"keys":` + string(js)
}

// fillBacklog enqueues n jobs in bulks of 1,000 from 4 producers.
func fillBacklog(b *testing.B, tb *testBundle, n int, jobJSON func(i int) string) {
	c := benchClient()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := int(next.Add(1000)) - 1000; start < n; start = int(next.Add(1000)) - 1000 {
				body := bulkBody(int64(start), int64(min(1000, n-start)), func(k int64) []byte { return []byte(jobJSON(int(k))) })
				if st, err := postJSON(c, tb.url+"/jobs/bulk", body); err != nil || st != 201 {
					b.Errorf("backlog: %d %v", st, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// drainBacklog times 4 take streams of queue until b.N jobs arrived.
func drainBacklog(b *testing.B, tb *testBundle, queue string) {
	c := benchClient()
	var received atomic.Int64
	target := int64(b.N)
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		w := &worker{url: tb.url, c: c, prefetch: 64, queue: queue, onJob: func(string) {
			if received.Add(1) == target {
				close(done)
			}
		}}
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.run(ctx) }()
	}
	elapsed := awaitJobs(b, done, &received, target, start)
	cancel()
	wg.Wait()
	b.ReportMetric(float64(target)/elapsed.Seconds(), "jobs/s")
}
