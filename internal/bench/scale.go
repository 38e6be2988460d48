package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

const (
	// scaleSettle is how long scale waits after the last enqueue before it
	// reads the server's memory: what the server holds at rest, not its
	// garbage of the fill.
	scaleSettle = 3 * time.Second
	// scaleJobsPerBudget is how many parked jobs share one exhausted budget.
	scaleJobsPerBudget = 10000
	// scaleBulk is the least jobs of a fill request: the fill goes as fast
	// as the server takes jobs.
	scaleBulk = 1000
	// restartTimeout bounds the restart after kill -9, however large the
	// store.
	restartTimeout = 10 * time.Minute
	// dialPoll is the pause between two tries of a probe that found no
	// server listening; readyPoll, between two asks of a server that is
	// not ready yet (each costs the starting server a request).
	dialPoll  = time.Millisecond
	readyPoll = 10 * time.Millisecond
)

// scaleScenario fills the child server with --scale-jobs jobs (queued, or
// parked on exhausted budgets with a worker connected), reads its memory
// once it has settled, kills it with SIGKILL and times its restart on the
// same root.
func (b *runner) scaleScenario(ctx context.Context, t *target) (*ScaleReport, error) {
	n := b.o.ScaleJobs
	rep := &ScaleReport{Jobs: n, Parked: b.o.ScaleParked}
	q := t.queue(b.prefix + "-scale")
	takeFrom := []string{q}
	mk := b.plainJob(q, nil)
	var held *heldStream
	if b.o.ScaleParked {
		var bind func(int) []api.BindingRequest
		var err error
		rep.Budgets = (n + scaleJobsPerBudget - 1) / scaleJobsPerBudget
		if bind, err = b.exhaustedBudgets(ctx, t, q, rep.Budgets); err != nil {
			return nil, err
		}
		mk = func(i int, sent time.Duration) api.EnqueueRequest {
			return api.EnqueueRequest{Type: api.Ptr("bench"), Queue: api.Ptr(q), Payload: b.payload(-1, sent), Budgets: bind(i)}
		}
		// A queue no worker serves holds its jobs in no line: a worker
		// makes them parked.
		if held, err = holdStream(ctx, t, q); err != nil {
			return nil, err
		}
		defer held.close()
	}
	rss0, rssErr := readRSS(t.child.pid())

	var sent atomic.Int64
	b.prog.set(func() string { return fmt.Sprintf("scale: enqueueing %d of %d jobs", sent.Load(), n) })
	bulk := max(b.o.Bulk, scaleBulk)
	start := time.Now()
	if err := b.produce(ctx, t, 0, n, bulk, mk, nil, 0, &sent); err != nil {
		return nil, err
	}
	d := time.Since(start)
	rep.Enqueue = Rate{Jobs: n, PerRequest: bulk, Seconds: round3(d.Seconds()), JobsPerS: perSecond(n, d)}
	if b.o.ScaleParked {
		// Parked jobs are never delivered: the first delivery after the
		// restart is of the job enqueued last, in a queue of its own.
		probe := t.queue(b.prefix + "-scale-probe")
		takeFrom = append(takeFrom, probe)
		if _, err := t.cl.Enqueue(ctx, api.EnqueueRequest{Type: api.Ptr("bench"), Queue: api.Ptr(probe), Payload: b.payload(0, b.since())}); err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
	}

	b.prog.setf("scale: %d jobs queued, letting the server settle", n)
	if err := sleep(ctx, scaleSettle); err != nil {
		return nil, err
	}
	var err error
	if rep.Memory, err = scaleMemory(t.child.pid(), rss0, rssErr, n); err != nil {
		return nil, err
	}
	if rep.JobsAfterFill, err = jobCounts(ctx, t); err != nil {
		return nil, err
	}
	if b.o.ScaleParked {
		rep.ParkedDelivered = held.close()
		if rep.JobsAfterFill.Parked < int64(n) {
			return nil, fmt.Errorf("only %d of %d jobs are parked", rep.JobsAfterFill.Parked, n)
		}
	}

	b.prog.setf("scale: killing zizq serve, timing its restart with %d jobs", n)
	if err := t.child.kill(); err != nil {
		return nil, err
	}
	if rep.Restart, err = b.timeRestart(ctx, t, takeFrom); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	return rep, nil
}

// exhaustedBudgets creates m budgets of one token a day, spends each one's
// token on a job of queue, and returns bindings of job i to one of them.
func (b *runner) exhaustedBudgets(ctx context.Context, t *target, queue string, m int) (func(int) []api.BindingRequest, error) {
	daily := api.BudgetInput{Allocation: api.Ptr(int64(1)), Strategy: &api.StrategyInput{
		Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr(int64(24 * time.Hour / time.Millisecond)), Burst: api.Ptr(int64(1))}}
	key := func(i int) string { return fmt.Sprintf("%s-day-%d", b.prefix, i%m) }
	b.prog.setf("scale: creating %d budgets", m)
	if err := parallel(ctx, 8, m, func(ctx context.Context, i int) error { return t.putBudget(ctx, key(i), daily) }); err != nil {
		return nil, err
	}
	bind := func(i int) []api.BindingRequest { return []api.BindingRequest{{Key: api.Ptr(key(i))}} }
	if _, err := b.flow(ctx, t, flowSpec{label: "scale: exhausting budgets", queue: queue, jobs: m, bind: bind}); err != nil {
		return nil, err
	}
	return bind, nil
}

// heldStream is a take stream that keeps a queue served, and counts the
// jobs it receives.
type heldStream struct {
	cancel    context.CancelFunc
	done      chan struct{}
	delivered atomic.Int64
}

func holdStream(ctx context.Context, t *target, queue string) (*heldStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	s, err := t.cl.Take(ctx, client.TakeOptions{Queues: []string{queue}, Prefetch: 1})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("take: %w", err)
	}
	h := &heldStream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		defer s.Close()
		for {
			if _, err := s.Next(); err != nil {
				return
			}
			h.delivered.Add(1)
		}
	}()
	return h, nil
}

// close ends the stream and returns the jobs it received.
func (h *heldStream) close() int64 {
	h.cancel()
	<-h.done
	return h.delivered.Load()
}

// scaleMemory reads the child's RSS and what it comes to a job: in all, and
// grown since rss0 (read before the fill, with rss0Err).
func scaleMemory(pid int, rss0 int64, rss0Err error, jobs int) (ScaleMemory, error) {
	rss, err := readRSS(pid)
	if err == nil {
		err = rss0Err
	}
	if errors.Is(err, errors.ErrUnsupported) {
		return ScaleMemory{Unsupported: err.Error()}, nil
	}
	if err != nil {
		return ScaleMemory{}, err
	}
	per := math.Round(float64(rss) / float64(jobs))
	grown := math.Round(float64(rss-rss0) / float64(jobs))
	return ScaleMemory{RSSBytes: &rss, IdleRSSBytes: &rss0, RSSPerJobBytes: &per, GrowthPerJobBytes: &grown}, nil
}

func jobCounts(ctx context.Context, t *target) (api.JobCounts, error) {
	st, err := t.cl.Stats(ctx)
	if err != nil {
		return api.JobCounts{}, fmt.Errorf("stats: %w", err)
	}
	return st.Jobs, nil
}

// timeRestart starts the killed child again and times, from just before
// its process starts: the first byte of an answer on /health, /ready
// answering 200, and the first job frame of a take stream of queues,
// opened again and again until the server accepts it.
func (b *runner) timeRestart(ctx context.Context, t *target, queues []string) (RestartReport, error) {
	var rep RestartReport
	ctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	// Connections to the killed process are dead.
	b.hc.CloseIdleConnections()
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer probe.CloseIdleConnections()
	start := time.Now()
	if err := t.child.restart(); err != nil {
		return rep, err
	}
	exited := t.child.proc.done
	g := newGroup(ctx)
	g.Go(func(ctx context.Context) error {
		d, err := firstHealthByte(ctx, probe, t.url, start, exited)
		rep.HealthMs = ms(d)
		return err
	})
	g.Go(func(ctx context.Context) error {
		d, err := untilReady(ctx, t.url, start, exited)
		rep.ReadyMs = ms(d)
		return err
	})
	g.Go(func(ctx context.Context) error {
		d, tries, err := firstFrame(ctx, t.cl, queues, start, exited)
		rep.FirstJobMs, rep.TakeAttempts = ms(d), tries
		return err
	})
	b.prog.set(func() string { return fmt.Sprintf("scale: restarted %.1f s ago", time.Since(start).Seconds()) })
	if err := g.wait(); err != nil {
		return rep, err
	}
	var err error
	rep.JobsAfterRestart, err = jobCounts(ctx, t)
	return rep, err
}

// errExited fails a probe of a server whose process has exited.
var errExited = errors.New("zizq serve exited")

// again waits pause before the next try of a probe, unless the context
// ends or the server's process exits first.
func again(ctx context.Context, pause time.Duration, exited <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-exited:
		return errExited
	case <-time.After(pause):
		return nil
	}
}

// firstHealthByte asks GET /health until an answer comes, and returns when
// its first byte came.
func firstHealthByte(ctx context.Context, hc *http.Client, url string, start time.Time, exited <-chan struct{}) (time.Duration, error) {
	for {
		var first time.Time
		tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Now() }})
		req, err := http.NewRequestWithContext(tctx, http.MethodGet, url+"/health", nil)
		if err != nil {
			return 0, err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			return first.Sub(start), nil
		}
		if err := again(ctx, dialPoll, exited); err != nil {
			return 0, fmt.Errorf("health: %w", err)
		}
	}
}

// untilReady asks GET /ready until it answers 200, on connections of its
// own, and returns when it did.
func untilReady(ctx context.Context, url string, start time.Time, exited <-chan struct{}) (time.Duration, error) {
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/ready", nil)
		if err != nil {
			return 0, err
		}
		pause := dialPoll
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
			pause = readyPoll
		}
		if err := again(ctx, pause, exited); err != nil {
			return 0, fmt.Errorf("ready: %w", err)
		}
	}
}

// firstFrame opens a take stream of queues as soon as the server accepts
// one and returns when its first job came, and how many tries the stream
// took. The job goes back to ready when the stream closes.
func firstFrame(ctx context.Context, cl *client.Client, queues []string, start time.Time, exited <-chan struct{}) (time.Duration, int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for tries := 1; ; tries++ {
		s, err := cl.Take(ctx, client.TakeOptions{Queues: queues, Prefetch: 1})
		if err == nil {
			defer s.Close()
			if _, err := s.Next(); err != nil {
				return 0, tries, fmt.Errorf("take: %w", err)
			}
			return time.Since(start), tries, nil
		}
		if !startingUp(err) {
			return 0, tries, fmt.Errorf("take: %w", err)
		}
		if err := again(ctx, dialPoll, exited); err != nil {
			return 0, tries, fmt.Errorf("take: %w", err)
		}
	}
}

// startingUp reports whether a take stream failed only because the server
// is not up yet: nothing listens, or it asks to come back later.
func startingUp(err error) bool {
	var ce *client.Error
	return client.IsUnreachable(err) || (errors.As(err, &ce) && ce.Status == http.StatusServiceUnavailable)
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
