package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// startLoading runs `serve` on a known port and returns once /ready
// answers 200: with plain jobs that is as soon as the first are loaded,
// well before the "Listening on" line that startServer waits for.
func startLoading(t *testing.T, root string) *proc {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(zizqBin, "serve", "--host", "127.0.0.1", "--port", port, "--no-admin", "--log-level", "warn", "--root-dir", root)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd, url: "http://127.0.0.1:" + port}
	t.Cleanup(func() { p.kill() })
	require.Eventually(t, func() bool {
		status, _, err := tryDo("GET", p.url+"/ready", nil)
		return err == nil && status == http.StatusOK
	}, 60*time.Second, 2*time.Millisecond, "server did not serve")
	return p
}

// fill enqueues n jobs of queue q, a thousand to a request from four
// producers, and records them.
func fill(t *testing.T, url, q string, n int, l *ledger) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w * 1000; i < n; i += 4000 {
				jobs := make([]map[string]any, 0, 1000)
				for k := i; k < min(i+1000, n); k++ {
					jobs = append(jobs, map[string]any{"type": "t", "queue": q, "payload": map[string]int{"n": k}})
				}
				status, data, err := tryDo("POST", url+"/jobs/bulk", map[string]any{"jobs": jobs})
				var out api.BulkJobs
				if err == nil && status == http.StatusCreated {
					err = json.Unmarshal(data, &out)
				} else if err == nil {
					err = fmt.Errorf("bulk enqueue: status %d: %s", status, data)
				}
				if err != nil {
					t.Error(err)
					return
				}
				for _, j := range out.Jobs {
					l.add(l.enqueued, j.ID)
				}
			}
		})
	}
	wg.Wait()
}

// produceBulk enqueues bulks of 100 jobs of queue q until ctx ends and
// records the acknowledged ones; bulks counts them.
func produceBulk(ctx context.Context, url, q string, l *ledger, bulks *atomic.Int64) {
	for i := 0; ctx.Err() == nil; i++ {
		jobs := make([]map[string]any, 100)
		for k := range jobs {
			jobs[k] = map[string]any{"type": "t", "queue": q, "payload": map[string]int{"n": i*100 + k}}
		}
		status, data, err := tryDo("POST", url+"/jobs/bulk", map[string]any{"jobs": jobs})
		var out api.BulkJobs
		if err != nil || status != http.StatusCreated || json.Unmarshal(data, &out) != nil {
			continue
		}
		for _, j := range out.Jobs {
			l.add(l.enqueued, j.ID)
		}
		bulks.Add(1)
	}
}

// TestCrash_KillNineWhileItLoads kills a server that serves while it loads
// a backlog: workers take and acknowledge (one at a time and in bulk) and
// producers enqueue (one at a time and in bulk) from the moment /ready
// answers, then SIGKILL. After a second restart every acknowledged enqueue
// is there unless its ack was sent, and no acknowledged ack comes back.
func TestCrash_KillNineWhileItLoads(t *testing.T) {
	root := t.TempDir()
	l := &ledger{enqueued: map[string]bool{}, acking: map[string]bool{}, acked: map[string]bool{}}
	p := startServer(t, "--root-dir", root)
	fill(t, p.url, "backlog", 150_000, l)
	p.kill()

	p = startLoading(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var bulks atomic.Int64
	wg.Go(func() { produceBulk(ctx, p.url, "bulk", l, &bulks) }) // the chunks of alike rows (store/sqlite/runs.go)
	for range 2 {
		wg.Go(func() { produce(ctx, p.url, l, false) })
		wg.Go(func() { consume(ctx, p.url, "backlog", 1, l) })
		wg.Go(func() { consume(ctx, p.url, "backlog", 8, l) }) // the one-statement ack of each of 8
	}
	// Kill at the first acknowledged acks, not after a fixed sleep: a
	// loaded machine may take longer than any sleep to serve at all, and a
	// fast one loads 150k jobs in a few hundred ms.
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.acked) >= 16 && bulks.Load() >= 2
	}, 60*time.Second, time.Millisecond, "jobs and bulks were acknowledged before the kill")
	p.kill() // while it loads, or just after on a fast machine
	cancel()
	wg.Wait()

	p = startServer(t, "--root-dir", root)
	jobs := allJobs(t, p.url)
	l.requireNoneCameBack(t, jobs)
	for id := range l.enqueued {
		if l.acking[id] {
			continue // completed, or not: either is correct
		}
		j, ok := jobs[id]
		require.True(t, ok, "acknowledged enqueue %s lost", id)
		require.Equal(t, "ready", j.Status)
	}
}
