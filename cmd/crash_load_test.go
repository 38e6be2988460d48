package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
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
				jobs := make([]string, 0, 1000)
				for k := i; k < min(i+1000, n); k++ {
					jobs = append(jobs, fmt.Sprintf(`{"type":"t","queue":%q,"payload":{"n":%d}}`, q, k))
				}
				req, _ := http.NewRequest("POST", url+"/jobs/bulk", strings.NewReader(`{"jobs":[`+strings.Join(jobs, ",")+`]}`))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if !assertOK(t, err, resp, http.StatusCreated) {
					return
				}
				var out api.BulkJobs
				err = json.NewDecoder(resp.Body).Decode(&out)
				resp.Body.Close()
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

func assertOK(t *testing.T, err error, resp *http.Response, want int) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	if resp.StatusCode != want {
		resp.Body.Close()
		t.Errorf("status %d, want %d", resp.StatusCode, want)
		return false
	}
	return true
}

// consumeBulk takes jobs and acknowledges them eight at a time with POST
// /jobs/success, the one-statement ack of each.
func consumeBulk(ctx context.Context, url, queue string, l *ledger) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/jobs/take?prefetch=16&queue="+queue, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	frames := api.NewFrameReader(resp.Body, api.NDJSON)
	var batch []string
	for {
		j, err := frames.Job()
		if err != nil {
			return
		}
		l.add(l.acking, j.ID)
		if batch = append(batch, j.ID); len(batch) < 8 {
			continue
		}
		status, _, err := tryDo("POST", url+"/jobs/success", map[string][]string{"ids": batch})
		if err == nil && status < 300 {
			for _, id := range batch {
				l.add(l.acked, id)
			}
		}
		batch = batch[:0]
	}
}

// TestCrash_KillNineWhileItLoads kills a server that serves while it loads
// a backlog: workers take and acknowledge (one at a time and in bulk) and
// producers enqueue from the moment /ready answers, then SIGKILL. After a
// second restart every acknowledged enqueue is there unless its ack was
// sent, and no acknowledged ack comes back.
func TestCrash_KillNineWhileItLoads(t *testing.T) {
	root := t.TempDir()
	l := &ledger{enqueued: map[string]bool{}, acking: map[string]bool{}, acked: map[string]bool{}}
	p := startServer(t, "--root-dir", root)
	fill(t, p.url, "backlog", 150_000, l)
	p.kill()

	p = startLoading(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { produce(ctx, p.url, l, false) })
		wg.Go(func() { consume(ctx, p.url, "backlog", l) })
		wg.Go(func() { consumeBulk(ctx, p.url, "backlog", l) })
	}
	time.Sleep(700 * time.Millisecond)
	p.kill() // while it loads, or just after on a fast machine
	cancel()
	wg.Wait()
	require.NotEmpty(t, l.acked, "jobs were acknowledged before the kill")

	p = startServer(t, "--root-dir", root)
	jobs := allJobs(t, p.url)
	for id := range l.acked {
		_, back := jobs[id] // a map lookup: require.NotContains walks the whole map
		require.False(t, back, "an acknowledged job %s came back", id)
	}
	for id := range l.enqueued {
		if l.acking[id] {
			continue // completed, or not: either is correct
		}
		j, ok := jobs[id]
		require.True(t, ok, "acknowledged enqueue %s lost", id)
		require.Equal(t, "ready", j.Status)
	}
}
