package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// stallTimeout fails a run whose progress stopped: a server that lost jobs
// must not hang the bench.
const stallTimeout = 60 * time.Second

// group runs goroutines until the first error, which cancels the others.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex
	err error
}

func newGroup(ctx context.Context) *group {
	g := &group{}
	g.ctx, g.cancel = context.WithCancel(ctx)
	return g
}

// fail records the first error and cancels the group. Errors that follow a
// cancellation are its echoes and are dropped.
func (g *group) fail(err error) {
	if err == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil && g.ctx.Err() == nil {
		g.err = err
		g.cancel()
	}
}

// cause is the error that failed the group, if any.
func (g *group) cause() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Go runs fn in the group; its error fails the group.
func (g *group) Go(fn func(context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.fail(fn(g.ctx))
	}()
}

// wait waits for the goroutines and returns the first error.
func (g *group) wait() error {
	g.wg.Wait()
	g.cancel()
	return g.cause()
}

// stop cancels the goroutines, waits for them and returns the first error.
func (g *group) stop() error {
	g.cancel()
	return g.wait()
}

// orCause prefers the group's own error to err, which may only be the
// cancellation it caused.
func (g *group) orCause(err error) error {
	if c := g.cause(); c != nil {
		return c
	}
	return err
}

// parallel runs fn for every i in [0, n) on at most k goroutines; the first
// error stops it.
func parallel(ctx context.Context, k, n int, fn func(ctx context.Context, i int) error) error {
	g := newGroup(ctx)
	var next atomic.Int64
	for range min(k, n) {
		g.Go(func(ctx context.Context) error {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return nil
				}
				if err := fn(ctx, i); err != nil {
					return err
				}
			}
		})
	}
	return g.wait()
}

// tally counts events and wakes those who wait for a count.
type tally struct {
	mu      sync.Mutex
	n       int64
	waiters []tallyWaiter
}

type tallyWaiter struct {
	want int64
	ch   chan struct{}
}

func (t *tally) add(d int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += d
	keep := t.waiters[:0]
	for _, w := range t.waiters {
		if t.n >= w.want {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	t.waiters = keep
}

func (t *tally) load() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// wait blocks until the count reaches want. It fails when the count has
// not moved for stallTimeout.
func (t *tally) wait(ctx context.Context, want int64) error {
	t.mu.Lock()
	if t.n >= want {
		t.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	t.waiters = append(t.waiters, tallyWaiter{want, ch})
	last, moved := t.n, time.Now()
	t.mu.Unlock()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if n := t.load(); n != last {
				last, moved = n, time.Now()
			} else if time.Since(moved) > stallTimeout {
				return fmt.Errorf("stalled: %d of %d after %s without progress", n, want, stallTimeout)
			}
		}
	}
}

// jobPayload is what every bench job carries.
type jobPayload struct {
	// I numbers the job in its run; -1 marks a job that must never be
	// delivered.
	I int64 `json:"i"`
	// T is when the job was sent, in nanoseconds since the run's epoch on
	// the monotonic clock.
	T   int64  `json:"t"`
	Pad string `json:"pad,omitempty"`
}

// payload renders a job's payload, padded to --payload-size bytes.
func (b *runner) payload(i int64, sent time.Duration) api.Payload {
	out := `{"i":` + strconv.FormatInt(i, 10) + `,"t":` + strconv.FormatInt(int64(sent), 10) + `}`
	if pad := b.o.PayloadSize - len(out) - len(`,"pad":""`); pad > 0 {
		out = out[:len(out)-1] + `,"pad":"` + b.padding(pad) + `"}`
	}
	return api.Payload(out)
}

// padding is n bytes of x, sliced from one string made once: the bench's
// producers share the server's cores, and every payload is padded.
func (b *runner) padding(n int) string {
	b.padOnce.Do(func() { b.pad = strings.Repeat("x", b.o.PayloadSize) })
	return b.pad[:n]
}

func decodePayload(p api.Payload) (jobPayload, error) {
	var out jobPayload
	err := json.Unmarshal(p, &out)
	return out, err
}

// worker takes jobs on one stream and acknowledges them in batches
// with POST /jobs/success, the way the official clients do.
type worker struct {
	cl       *client.Client
	queues   []string
	prefetch int
	id       string
	// handle runs one job and calls done, from any goroutine, when the job
	// may be acknowledged.
	handle func(j api.Job, done func())
	// acked counts the jobs of each acknowledged batch.
	acked func(n int)
	// fail reports an error at once (the ack loop runs on its own).
	fail func(error)
}

func (w *worker) run(ctx context.Context) error {
	s, err := w.cl.Take(ctx, client.TakeOptions{Queues: w.queues, Prefetch: w.prefetch, WorkerID: w.id})
	if err != nil {
		return fmt.Errorf("take: %w", err)
	}
	defer s.Close()
	ids := make(chan string, w.prefetch)
	acksDone := make(chan struct{})
	go func() {
		defer close(acksDone)
		w.ackLoop(ctx, ids)
	}()
	var handlers sync.WaitGroup
	for {
		j, nerr := s.Next()
		if nerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("take: %w", nerr)
			}
			break
		}
		handlers.Add(1)
		w.handle(j, func() {
			ids <- j.ID
			handlers.Done()
		})
	}
	handlers.Wait()
	close(ids)
	<-acksDone
	return err
}

// ackLoop acknowledges what is waiting in one request, again and again.
// After an error it only drains ids, so that no handler blocks.
func (w *worker) ackLoop(ctx context.Context, ids <-chan string) {
	batch := make([]string, 0, 256)
	failed := false
	for id := range ids {
		if failed {
			continue
		}
		batch = append(batch[:0], id)
		for more := true; more && len(batch) < cap(batch); {
			select {
			case id, ok := <-ids:
				if !ok {
					more = false
					break
				}
				batch = append(batch, id)
			default:
				more = false
			}
		}
		notFound, err := w.cl.AckBulk(ctx, batch)
		if err == nil && len(notFound) > 0 {
			err = fmt.Errorf("%d of %d acknowledged jobs were not in flight (e.g. %s)", len(notFound), len(batch), notFound[0])
		}
		if err != nil {
			if ctx.Err() == nil {
				w.fail(fmt.Errorf("ack: %w", err))
			}
			failed = true
			continue
		}
		w.acked(len(batch))
	}
}

// startWorkers starts --workers workers of a queue in g; it returns the
// count of jobs each has had acknowledged.
func (b *runner) startWorkers(g *group, t *target, queue string, handle func(api.Job, func()), acked *tally) []*atomic.Int64 {
	counts := make([]*atomic.Int64, b.o.Workers)
	for i := range b.o.Workers {
		own := new(atomic.Int64)
		counts[i] = own
		w := &worker{
			cl: t.cl, queues: []string{queue}, prefetch: b.o.Prefetch, id: fmt.Sprintf("%s-%d", b.prefix, i),
			handle: handle, acked: func(n int) { own.Add(int64(n)); acked.add(int64(n)) }, fail: g.fail,
		}
		g.Go(w.run)
	}
	return counts
}

// jobMaker builds job i, sent at the given time.
type jobMaker func(i int, sent time.Duration) api.EnqueueRequest

// produce enqueues jobs [from, to) in requests of bulk jobs (POST /jobs
// when bulk is 1) from --producers concurrent clients. With acked, a
// producer waits until it is no more than window jobs ahead of the
// acknowledgements.
func (b *runner) produce(ctx context.Context, t *target, from, to, bulk int, mk jobMaker, acked *tally, window int64, sent *atomic.Int64) error {
	n := (to - from + bulk - 1) / bulk
	return parallel(ctx, b.o.Producers, n, func(ctx context.Context, k int) error {
		lo := from + k*bulk
		hi := min(lo+bulk, to)
		if acked != nil {
			if err := acked.wait(ctx, int64(hi)-window); err != nil {
				return err
			}
		}
		now := b.since()
		reqs := make([]api.EnqueueRequest, 0, hi-lo)
		for i := lo; i < hi; i++ {
			reqs = append(reqs, mk(i, now))
		}
		var err error
		if bulk == 1 {
			_, err = t.cl.Enqueue(ctx, reqs[0])
		} else {
			err = t.postBulk(ctx, b.hc, b.o.Timeout, reqs)
		}
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		if sent != nil {
			sent.Add(int64(len(reqs)))
		}
		return nil
	})
}

// plainJob makes jobs of a queue, unbudgeted or bound by bind.
func (b *runner) plainJob(queue string, bind func(i int) []api.BindingRequest) jobMaker {
	return func(i int, sent time.Duration) api.EnqueueRequest {
		req := api.EnqueueRequest{Type: api.Ptr("bench"), Queue: api.Ptr(queue), Payload: b.payload(int64(i), sent)}
		if bind != nil {
			req.Budgets = bind(i)
		}
		return req
	}
}

// flowSpec is one end-to-end run.
type flowSpec struct {
	label  string
	queue  string
	warmup int
	jobs   int
	bind   func(i int) []api.BindingRequest // nil: unbudgeted jobs
}

// flowResult is what one end-to-end run measured.
type flowResult struct {
	elapsed time.Duration
	latency []time.Duration
	// foreign counts deliveries of jobs the run did not send, or that
	// must never be delivered.
	foreign int64
}

// flow runs producers and workers together: warm-up jobs first, then the
// measured ones, timed from their first enqueue to their last
// acknowledgement.
func (b *runner) flow(ctx context.Context, t *target, s flowSpec) (flowResult, error) {
	var res flowResult
	g := newGroup(ctx)
	defer g.stop()
	var (
		acked   tally
		sent    atomic.Int64
		foreign atomic.Int64
		mu      sync.Mutex
		lat     = make([]time.Duration, 0, s.jobs)
	)
	total := s.warmup + s.jobs
	b.startWorkers(g, t, s.queue, func(j api.Job, done func()) {
		now := b.since()
		p, err := decodePayload(j.Payload)
		switch {
		case err != nil || p.I < 0 || p.I >= int64(total):
			foreign.Add(1)
		case p.I >= int64(s.warmup):
			mu.Lock()
			lat = append(lat, now-time.Duration(p.T))
			mu.Unlock()
		}
		done()
	}, &acked)
	// Enough to keep every stream full with as much again waiting, and
	// never less than one bulk (or no producer could send).
	window := int64(2*b.o.Workers*b.o.Prefetch + b.o.Bulk)
	mk := b.plainJob(s.queue, s.bind)
	b.prog.set(func() string {
		return fmt.Sprintf("%s: %d of %d jobs acknowledged (%d warm-up)", s.label, acked.load(), total, s.warmup)
	})
	phase := func(from, to int) error {
		if err := b.produce(g.ctx, t, from, to, b.o.Bulk, mk, &acked, window, &sent); err != nil {
			return g.orCause(err)
		}
		return g.orCause(acked.wait(g.ctx, int64(to)))
	}
	if err := phase(0, s.warmup); err != nil {
		return res, err
	}
	start := time.Now()
	if err := phase(s.warmup, total); err != nil {
		return res, err
	}
	res.elapsed = time.Since(start)
	if err := g.stop(); err != nil {
		return res, err
	}
	mu.Lock()
	res.latency = lat
	mu.Unlock()
	res.foreign = foreign.Load()
	return res, nil
}

// warmupOf is how many warm-up jobs precede n measured ones.
func warmupOf(n int) int { return min(n/10, 2000) }

// Latency holds percentiles in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95,omitempty"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// latencyOf computes nearest-rank percentiles of d (which it sorts).
func latencyOf(d []time.Duration, withP95 bool) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	q := func(p float64) float64 {
		k := int(math.Ceil(p*float64(len(d)))) - 1
		return ms(d[max(0, min(k, len(d)-1))])
	}
	out := Latency{P50: q(0.50), P99: q(0.99), Max: ms(d[len(d)-1])}
	if withP95 {
		out.P95 = q(0.95)
	}
	return out
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(n)/d.Seconds()*10) / 10
}
