package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/internal/buildinfo"
)

// target is the server one scenario loads: a child process of its own,
// or the server named by --url. It remembers the queues and budgets the
// scenario creates, so they can be deleted from a server that is not ours.
type target struct {
	cl    *client.Client
	url   string
	admin string       // the admin port's URL, "" if none is known
	child *childServer // nil with --url

	mu      sync.Mutex
	queues  []string
	budgets []string
}

// withTarget runs one scenario against its server: a fresh child, or the
// --url server, from which the scenario's jobs and budgets are deleted
// afterwards.
func (b *runner) withTarget(ctx context.Context, name string, rep *Report, fn func(context.Context, *target) error) (err error) {
	t := &target{url: b.o.URL, admin: b.o.AdminURL}
	if t.url == "" {
		b.prog.setf("%s: starting zizq serve", name)
		spec := childSpec{binary: b.o.ServerBinary, commitMode: b.o.CommitMode}
		if b.o.EventSubscribers > 0 && name == ScenarioE2E {
			if spec.adminPort, err = freePort(); err != nil {
				return err
			}
		}
		if name == ScenarioScale {
			// scale restarts the server with the same flags: a port
			// known before it starts, not 0.
			if spec.port, err = freePort(); err != nil {
				return err
			}
		}
		t.child, err = startChild(ctx, spec)
		if err != nil {
			return err
		}
		rep.Server.Binary = t.child.binary
		defer func() {
			if serr := t.child.stop(); err == nil {
				err = serr
			}
		}()
		t.url, t.admin = t.child.url, t.child.admin
	}
	timeout := b.o.Timeout
	if timeout == 0 {
		timeout = -1 // no limit
	}
	t.cl, err = client.New(t.url, client.Options{HTTPClient: b.hc, Timeout: timeout, UserAgent: "zizq-bench/" + buildinfo.Version})
	if err != nil {
		return fmt.Errorf("--url: %w", err)
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
func (t *target) explain(err error) error {
	if t.child == nil {
		return err
	}
	if msg := t.child.exited(); msg != "" {
		return fmt.Errorf("%w (zizq serve exited: %s)", err, msg)
	}
	return err
}

// queue names one of the scenario's queues and remembers it.
func (t *target) queue(name string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queues = append(t.queues, name)
	return name
}

// putBudget creates or replaces a budget and remembers its key.
func (t *target) putBudget(ctx context.Context, key string, in api.BudgetInput) error {
	t.mu.Lock()
	t.budgets = append(t.budgets, key)
	t.mu.Unlock()
	if _, err := t.cl.PutBudget(ctx, key, in); err != nil {
		return fmt.Errorf("put budget %s: %w", key, err)
	}
	return nil
}

// rss reads the server's resident set size from /stats.
func (t *target) rss(ctx context.Context) (int64, error) {
	st, err := t.cl.Stats(ctx)
	if err != nil {
		return 0, fmt.Errorf("stats: %w", err)
	}
	return st.RSSBytes, nil
}

// cleanup deletes the jobs of the scenario's queues, then its budgets.
func (t *target) cleanup(ctx context.Context) error {
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

// work reads the server's dispatch work counters from /metrics: entries
// examined and decisions made.
func (b *runner) work(ctx context.Context, t *target) (examined, decisions float64, err error) {
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
