package cmd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/batchexpr"
	"github.com/zizq/zizq/store/sqlite"
)

var zizqBin string

func TestMain(m *testing.M) {
	batchexpr.ServeIfWorker() // in-process servers start this binary to run batch programs
	dir, err := os.MkdirTemp("", "zizq-bin")
	if err != nil {
		panic(err)
	}
	zizqBin = filepath.Join(dir, "zizq")
	build := exec.Command("go", "build", "-o", zizqBin, "./zizq")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		panic("build zizq: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a zizq server running as a child process.
type proc struct {
	cmd   *exec.Cmd
	url   string
	admin string // the admin port's URL
}

func startServer(t *testing.T, args ...string) *proc {
	t.Helper()
	return startServerBin(t, zizqBin, args...)
}

// startServerBin runs `serve` of the binary bin.
func startServerBin(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--log-level", "warn"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	p := &proc{cmd: cmd}
	t.Cleanup(func() { p.kill() })
	lines := bufio.NewScanner(stdout)
	// "Listening on URL (primary)", and "(admin)" for the admin port.
	found := make(chan [2]string, 2)
	go func() {
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), "Listening on "); ok {
				f := strings.Fields(rest)
				found <- [2]string{f[0], f[len(f)-1]}
			}
		}
	}()
	for p.url == "" || p.admin == "" {
		select {
		case l := <-found:
			if l[1] == "(admin)" {
				p.admin = l[0]
			} else {
				p.url = l[0]
			}
		case <-time.After(20 * time.Second):
			t.Fatal("server did not start")
		}
	}
	return p
}

// kill stops the server with SIGKILL: no shutdown code runs.
func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

func do(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	status, data, err := tryDo(method, url, body)
	require.NoError(t, err)
	return status, data
}

func tryDo(method, url string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// ledger is what clients were told: enqueues answered 201 and acks
// answered 204, plus the acks that were sent at all (an ack can take effect
// and the server die before its 204 comes back).
type ledger struct {
	mu       sync.Mutex
	enqueued map[string]bool
	acking   map[string]bool
	acked    map[string]bool
}

func (l *ledger) add(m map[string]bool, id string) {
	l.mu.Lock()
	m[id] = true
	l.mu.Unlock()
}

func produce(ctx context.Context, url string, l *ledger, budgeted bool) {
	for i := 0; ctx.Err() == nil; i++ {
		job := map[string]any{"type": "t", "queue": "plain", "payload": map[string]int{"n": i}}
		if budgeted && i%3 == 0 {
			job["queue"] = "limited"
			job["budgets"] = []map[string]any{{"key": "conc"}}
		}
		status, data, err := tryDo("POST", url+"/jobs", job)
		if err != nil || status != http.StatusCreated {
			continue
		}
		var j api.Job
		if json.Unmarshal(data, &j) == nil {
			l.add(l.enqueued, j.ID)
		}
	}
}

// consume takes jobs of queue and acknowledges them: one at a time with
// POST /jobs/{id}/success when batch is 1, else batch at a time with POST
// /jobs/success (a partial batch left when the stream ends is not sent).
func consume(ctx context.Context, url, queue string, batch int, l *ledger) {
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/jobs/take?prefetch=%d&queue=%s", url, max(8, 2*batch), queue), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	frames := api.NewFrameReader(resp.Body, api.NDJSON)
	var ids []string
	for {
		j, err := frames.Job()
		if err != nil {
			return
		}
		l.add(l.acking, j.ID)
		if ids = append(ids, j.ID); len(ids) < batch {
			continue
		}
		if ackAll(url, ids) {
			for _, id := range ids {
				l.add(l.acked, id)
			}
		}
		ids = ids[:0]
	}
}

// ackAll acknowledges ids, one alone by its own URL, and reports whether
// the server answered 204.
func ackAll(url string, ids []string) bool {
	target, body := url+"/jobs/"+ids[0]+"/success", any(nil)
	if len(ids) > 1 {
		target, body = url+"/jobs/success", map[string][]string{"ids": ids}
	}
	status, _, err := tryDo("POST", target, body)
	return err == nil && status == http.StatusNoContent
}

// requireNoneCameBack fails unless every acknowledged ack held: no job
// acked is among jobs. A lookup each, since require.NotContains walks the
// whole map for every ID.
func (l *ledger) requireNoneCameBack(t *testing.T, jobs map[string]api.Job) {
	t.Helper()
	for id := range l.acked {
		_, back := jobs[id]
		require.False(t, back, "an acknowledged job %s came back", id)
	}
}

// allJobs lists every job by following the pages.
func allJobs(t *testing.T, url string) map[string]api.Job {
	out := map[string]api.Job{}
	next := "/jobs?limit=2000"
	for next != "" {
		status, data := do(t, "GET", url+next, nil)
		require.Equal(t, http.StatusOK, status, "%s", data)
		var page api.JobList
		require.NoError(t, json.Unmarshal(data, &page))
		for _, j := range page.Jobs {
			out[j.ID] = j
		}
		next = ""
		if page.Pages.Next != nil {
			next = *page.Pages.Next
		}
	}
	return out
}

// TestCrash_KillNineKeepsAcknowledgedWork loads a real server with
// enqueues, takes and acks, kills it with SIGKILL mid-stream, and restarts
// it on the same root: every acknowledged enqueue is still there unless its
// ack was acknowledged, no acknowledged ack comes back, the budget and its
// bindings survive, and the while_in_flight budget of 3 lets exactly 3 run.
func TestCrash_KillNineKeepsAcknowledgedWork(t *testing.T) {
	for _, mode := range []string{"buffered", "fsync"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			p := startServer(t, "--root-dir", root, "--default-commit-mode", mode)
			status, data := do(t, "PUT", p.url+"/budgets/conc", map[string]any{"allocation": 3, "strategy": map[string]any{"type": "while_in_flight"}})
			require.Equal(t, http.StatusOK, status, "%s", data)

			l := &ledger{enqueued: map[string]bool{}, acking: map[string]bool{}, acked: map[string]bool{}}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for i := 0; i < 3; i++ {
				wg.Add(2)
				go func() { defer wg.Done(); produce(ctx, p.url, l, true) }()
				go func() { defer wg.Done(); consume(ctx, p.url, "plain", 1, l) }()
			}
			time.Sleep(1500 * time.Millisecond)
			p.kill() // mid-stream
			cancel()
			wg.Wait()
			require.NotEmpty(t, l.enqueued)
			require.NotEmpty(t, l.acked)

			db, err := sqlite.Open(context.Background(), filepath.Join(root, "data"), sqlite.Options{})
			require.NoError(t, err)
			require.NoError(t, db.IntegrityCheck(context.Background()))
			require.NoError(t, db.Close())

			p = startServer(t, "--root-dir", root, "--default-commit-mode", mode)
			jobs := allJobs(t, p.url)
			l.requireNoneCameBack(t, jobs)
			limited := 0
			for id := range l.enqueued {
				if l.acking[id] {
					continue // completed, or not: either is correct
				}
				j, ok := jobs[id]
				require.True(t, ok, "acknowledged enqueue %s lost", id)
				require.Equal(t, "ready", j.Status)
				if j.Queue == "limited" {
					require.Equal(t, []api.Binding{{Key: "conc", Cost: 1}}, j.Budgets)
					limited++
				}
			}
			require.Greater(t, limited, 3, "the setup leaves more budgeted jobs than the budget allows at once")
			status, data = do(t, "GET", p.url+"/budgets/conc", nil)
			require.Equal(t, http.StatusOK, status)
			require.Contains(t, string(data), `"allocation":3`)

			// Exactly 3 budgeted jobs run at once after the restart.
			got := takeCount(t, p.url, "limited", 2*time.Second)
			require.Equal(t, 3, got)
		})
	}
}

// takeCount opens an unlimited take stream that never acks and counts the
// frames that arrive within d.
func takeCount(t *testing.T, url, queue string, d time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/jobs/take?prefetch=0&queue=%s", url, queue), nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	n := 0
	frames := api.NewFrameReader(resp.Body, api.NDJSON)
	for {
		if _, err := frames.Job(); err != nil {
			return n
		}
		n++
	}
}
