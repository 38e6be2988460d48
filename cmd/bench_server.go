package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// childStartTimeout bounds how long a child server may take to listen.
const childStartTimeout = 30 * time.Second

// benchTarget is the server one scenario loads: a child process of its own,
// or the server named by --url. It remembers the queues and budgets the
// scenario creates, so they can be deleted from a server that is not ours.
type benchTarget struct {
	cl    *client.Client
	url   string
	child *childServer // nil with --url

	mu      sync.Mutex
	queues  []string
	budgets []string
}

// withTarget runs one scenario against its server: a fresh child, or the
// --url server, from which the scenario's jobs and budgets are deleted
// afterwards.
func (b *bench) withTarget(ctx context.Context, name string, rep *BenchReport, fn func(context.Context, *benchTarget) error) (err error) {
	t := &benchTarget{url: b.o.URL}
	if t.url == "" {
		b.prog.setf("%s: starting zizq serve", name)
		t.child, err = startChild(ctx, b.o.CommitMode)
		if err != nil {
			return err
		}
		defer func() {
			if serr := t.child.stop(); err == nil {
				err = serr
			}
		}()
		t.url = t.child.url
	}
	timeout := b.f.Opts.Timeout
	if timeout == 0 {
		timeout = -1 // --timeout 0: no limit
	}
	t.cl, err = client.New(t.url, client.Options{HTTPClient: b.hc, Timeout: timeout, UserAgent: "zizq-bench/" + version})
	if err != nil {
		return usageError{fmt.Errorf("--url: %w", err)}
	}
	v, err := t.cl.Version(ctx)
	if err != nil {
		return t.explain(err)
	}
	rep.Server.Version = v.Version
	if t.child == nil {
		defer func() {
			b.prog.setf("%s: deleting the bench's jobs and budgets", name)
			// The run's context may be cancelled: clean up anyway.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if cerr := t.cleanup(cctx); err == nil && cerr != nil {
				err = fmt.Errorf("clean up: %w", cerr)
			}
		}()
	}
	if err := fn(ctx, t); err != nil {
		return t.explain(fmt.Errorf("%s: %w", name, err))
	}
	return nil
}

// explain adds what a dead child server said to an error.
func (t *benchTarget) explain(err error) error {
	if t.child == nil {
		return err
	}
	if msg := t.child.exited(); msg != "" {
		return fmt.Errorf("%w (zizq serve exited: %s)", err, msg)
	}
	return err
}

// queue names one of the scenario's queues and remembers it.
func (t *benchTarget) queue(name string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queues = append(t.queues, name)
	return name
}

// putBudget creates or replaces a budget and remembers its key.
func (t *benchTarget) putBudget(ctx context.Context, key string, in api.BudgetInput) error {
	t.mu.Lock()
	t.budgets = append(t.budgets, key)
	t.mu.Unlock()
	if _, err := t.cl.PutBudget(ctx, key, in); err != nil {
		return fmt.Errorf("put budget %s: %w", key, err)
	}
	return nil
}

// rss reads the server's resident set size from /stats.
func (t *benchTarget) rss(ctx context.Context) (int64, error) {
	st, err := t.cl.Stats(ctx)
	if err != nil {
		return 0, fmt.Errorf("stats: %w", err)
	}
	return st.RSSBytes, nil
}

// cleanup deletes the jobs of the scenario's queues, then its budgets.
func (t *benchTarget) cleanup(ctx context.Context) error {
	t.mu.Lock()
	queues, budgets := t.queues, t.budgets
	t.mu.Unlock()
	var errs []error
	if len(queues) > 0 {
		if _, err := t.cl.DeleteJobs(ctx, api.JobQuery{Queues: queues}); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, parallel(ctx, 8, len(budgets), func(ctx context.Context, i int) error {
		err := t.cl.DeleteBudget(ctx, budgets[i])
		var ce *client.Error
		if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
			return nil
		}
		return err
	}))
	return errors.Join(errs...)
}

// childServer is a `zizq serve` started by bench on a temporary root.
type childServer struct {
	cmd    *exec.Cmd
	url    string
	root   string
	stderr *tailBuffer
	done   chan struct{} // closed once the process has exited
	err    error         // its exit status, once done
}

// startChild starts `zizq serve` (this very executable) on a temporary
// root and a free port of 127.0.0.1, and waits until it listens.
func startChild(ctx context.Context, commitMode string) (*childServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the zizq executable: %w", err)
	}
	root, err := os.MkdirTemp("", "zizq-bench-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--host", "127.0.0.1", "--port", "0", "--root-dir", root, "--log-level", "warn"}
	if commitMode != "" {
		args = append(args, "--default-commit-mode", commitMode)
	}
	s := &childServer{root: root, stderr: &tailBuffer{max: 4096}, done: make(chan struct{})}
	s.cmd = exec.Command(exe, args...)
	// The server's own defaults, whatever the environment configures.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZIZQ_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("start zizq serve: %w", err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := listenLine(sc.Text()); ok {
				select {
				case listening <- addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case s.url = <-listening:
		return s, nil
	case <-s.done:
		err = fmt.Errorf("zizq serve exited before listening: %s", s.exited())
	case <-time.After(childStartTimeout):
		err = fmt.Errorf("zizq serve did not listen within %s", childStartTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = s.stop()
	return nil, err
}

// listenLine reads the URL from the server's "Listening on URL (primary)"
// line.
func listenLine(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "Listening on ")
	if !ok {
		return "", false
	}
	url, kind, _ := strings.Cut(rest, " ")
	if kind != "(primary)" {
		return "", false
	}
	return url, true
}

// exited describes how the child ended, with the tail of its log; "" while
// it runs.
func (s *childServer) exited() string {
	select {
	case <-s.done:
	case <-time.After(100 * time.Millisecond):
		return ""
	}
	msg := "exit status 0"
	if s.err != nil {
		msg = s.err.Error()
	}
	if tail := strings.TrimSpace(s.stderr.String()); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// stop shuts the child down (an interrupt, then a kill after 15 s) and
// removes its root.
func (s *childServer) stop() error {
	select {
	case <-s.done:
	default:
		if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
			_ = s.cmd.Process.Kill()
		}
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	if err := os.RemoveAll(s.root); err != nil {
		return fmt.Errorf("remove the temporary root: %w", err)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// work reads the server's dispatch work counters from /metrics: entries
// examined and decisions made.
func (b *bench) work(ctx context.Context, t *benchTarget) (examined, decisions float64, err error) {
	req, err := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(t.url, "/")+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "zizq_dispatch_entries_examined_total":
			examined, _ = strconv.ParseFloat(value, 64)
		case "zizq_dispatch_decisions_total":
			decisions, _ = strconv.ParseFloat(value, 64)
		}
	}
	return examined, decisions, sc.Err()
}
