// Package core is zizq's one service: every transport (the HTTP API, the
// admin port) calls it, and it joins the engine (the live state and every
// dispatch decision) to the store (the durable record) by the rules that
// keep them agreeing:
//
//   - A change is applied to the engine, which journals it to the store in
//     the engine's own order, and answered once it is durable.
//   - An enqueue is dispatched only after its commit; a failed commit
//     undoes it, so no worker ever sees a job that was not stored.
//   - A job's live fields (status, queue, priority, attempts, bindings, ...)
//     are the engine's; its payload and whatever else never changes come
//     from the store, or from a small cache of jobs enqueued moments ago,
//     so the hot enqueue → take path does not read back what it just wrote.
//   - Start-up loads only what the engine needs, then returns jobs left in
//     flight to ready.
//   - An enqueue whose unique key another job holds creates nothing: its
//     answer is that job, read as GET reads it.
//   - A batched enqueue's jq programs run outside the engine lock, in
//     sandboxed worker processes; its folds apply only against the pending
//     jobs they were decided on (batch.go).
//
// Errors are *Error values of a few kinds (errors.Is with ErrNotFound, ...);
// transports map each kind to their own status in one place.
//
// Lock order: the batch keys' locks (in key order, held across a batched
// enqueue's evaluation and commit), then Engine.mu, then the store
// writer's lock (taken by Journal.Append under the engine lock); the
// payload cache's lock is taken alone.
package core

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/zizq/zizq/server/batchexpr"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// Options configure a Service.
type Options struct {
	// Open opens the store; the service closes it.
	Open   func(ctx context.Context) (Store, error)
	Engine EngineConfig
	// LeaseHeld, when set, reports whether this service may still hand
	// jobs out: a cluster's leader that may have lost its lease must not,
	// since another leader may be dispatching the same jobs. nil: always.
	LeaseHeld func() bool
	// PayloadCacheBytes bounds the payloads of recent enqueues kept for
	// their dispatch (0: DefaultPayloadCacheBytes; negative: none).
	PayloadCacheBytes int64
	// PayloadCacheHeap, when positive, is the live heap the payload cache
	// shares with the engine's jobs: its bound shrinks to what this leaves
	// beside them (engine.BytesPerJob a job), so a backlog takes the
	// cache's memory rather than adding to it. 0: the bound stays
	// PayloadCacheBytes, however many jobs there are.
	PayloadCacheHeap int64
	Clock            clock.Clock  // nil: the real clock
	Logger           *slog.Logger // nil: slog.Default()
	// BeforeRestore, when set, runs once the store is open and before the
	// engine is rebuilt (tests hold the start there).
	BeforeRestore func(context.Context)
	// Batches runs batched jobs' programs (nil: a batchexpr.Sandbox of
	// worker processes); the service closes it.
	Batches BatchEvaluator
	// MaxPayloadBytes bounds a payload that a fold makes, as the transport
	// bounds one sent (0: 16 MiB). Used when Batches is nil.
	MaxPayloadBytes int64
	// BatchSandbox tunes the sandbox made when Batches is nil; its payload
	// limit and logger come from MaxPayloadBytes and Logger when unset.
	BatchSandbox batchexpr.SandboxOptions
}

// DefaultPayloadCacheBytes is the payload cache's default bound: enough for
// the jobs between an enqueue and its dispatch to an idle worker, small
// beside a backlog's records.
const DefaultPayloadCacheBytes = 8 << 20

// Service is the core. Its methods are safe for concurrent use; those that
// need the loaded state answer ErrStarting until Ready is closed.
type Service struct {
	opts   Options
	clock  clock.Clock
	log    *slog.Logger
	engine *engine.Engine
	store  Store
	cache  *payloadCache
	cron   cronState
	// batches runs batch programs; batchKeys serialises folds by key.
	batches   BatchEvaluator
	batchKeys *keyLocks
	events    hub // the event stream's subscriptions (events.go)
	life      lifecycle
	closed    sync.Once
}

// lifecycle tracks the start.
type lifecycle struct {
	// serving is closed once the engine serves: the jobs loaded so far are
	// dispatched, acknowledged and failed, and plain jobs enqueued, while
	// the rest load (restore). ready is closed once it is loaded whole.
	serving chan struct{}
	ready   chan struct{}
	failed  chan struct{} // closed if the start failed; err says why
	done    chan struct{} // closed when the start goroutine returns
	err     error
	cancel  context.CancelFunc
}

// Start returns a service at once and opens its store, returns the last
// run's in-flight jobs to ready and loads the engine in the background.
// Close it to close the store; Close also ends a start in progress.
func Start(ctx context.Context, opts Options) *Service {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PayloadCacheBytes == 0 {
		opts.PayloadCacheBytes = DefaultPayloadCacheBytes
	}
	if opts.Batches == nil {
		so := opts.BatchSandbox
		if so.Limits.MaxPayloadBytes == 0 {
			so.Limits.MaxPayloadBytes = int(opts.MaxPayloadBytes)
		}
		if so.Logger == nil {
			so.Logger = opts.Logger
		}
		opts.Batches = batchexpr.NewSandbox(so)
	}
	s := &Service{opts: opts, clock: opts.Clock, log: opts.Logger, cache: newPayloadCache(opts.PayloadCacheBytes, opts.Clock.Now),
		cron: newCronState(), batches: opts.Batches, batchKeys: newKeyLocks()}
	s.life = lifecycle{serving: make(chan struct{}), ready: make(chan struct{}), failed: make(chan struct{}), done: make(chan struct{})}
	ctx, s.life.cancel = context.WithCancel(ctx)
	go s.start(ctx)
	return s
}

func (s *Service) start(ctx context.Context) {
	defer close(s.life.done)
	st, err := s.opts.Open(ctx)
	if err != nil {
		s.fail(fmt.Errorf("open store: %w", err))
		return
	}
	if s.opts.BeforeRestore != nil {
		s.opts.BeforeRestore(ctx)
	}
	// The store first: the engine may serve (and takes read payloads)
	// while restore is still loading it.
	s.store = st
	e, err := s.restore(ctx, st)
	if err != nil {
		s.store = nil // closed here, not again by Close
		_ = st.Close()
		s.fail(err)
		return
	}
	s.engine = e
	s.serve()
	groups, err := s.loadCron(ctx)
	if err != nil {
		_ = st.Close()
		s.fail(err)
		return
	}
	s.cron.groups = groups
	e.OnAlarm(s.onCronAlarm)
	close(s.life.ready)
	go s.runCron(ctx)
	// Occurrences missed while the server was down fire now.
	s.cron.mu.Lock()
	s.armLocked(s.cron.groups)
	s.cron.mu.Unlock()
}

func (s *Service) fail(err error) {
	s.log.Error("server failed to start", "err", err)
	s.life.err = err
	close(s.life.failed)
}

// restore rebuilds the engine from the store. The store returns the last
// run's in-flight jobs to ready once the load's snapshot is taken, so the
// engine still knows which they were (a queued one takes its unique key
// again if it is free). When the store's live jobs are plain, the engine
// serves from then on, while the rest load (engine.Restorer.Serve).
func (s *Service) restore(ctx context.Context, st Store) (*engine.Engine, error) {
	cfg := s.opts.Engine
	if cfg.Resets == nil {
		cfg.Resets = parseResetSchedule
	}
	e := engine.New(cfg, s.clock, journal{st}, jobid.New(s.clock.Now))
	r := e.Restore()
	var requeued int64
	begin := func(start store.LoadStart) error {
		r.MaxID(start.MaxID)
		n, err := st.RecoverInFlight(ctx)
		if err != nil {
			return fmt.Errorf("recover in-flight jobs: %w", err)
		}
		requeued = n
		if start.Plain && r.Serve() {
			s.engine, s.store = e, st
			s.serve()
			s.log.Info("serving while the engine loads")
		}
		return nil
	}
	err := load(ctx, st, r, begin)
	jobs := r.Finish()
	if err != nil {
		return nil, err
	}
	s.log.Info("engine restored", "jobs", jobs, "requeued", requeued)
	return e, nil
}

// serve marks the service as serving, once.
func (s *Service) serve() {
	select {
	case <-s.life.serving:
	default:
		close(s.life.serving)
	}
}

// journal adapts the store to the engine's Journal.
type journal struct{ st Store }

func (j journal) Append(ops ...store.Op) engine.Waiter { return j.st.Append(ops...) }

// Ready is closed once the service serves every call.
func (s *Service) Ready() <-chan struct{} { return s.life.ready }

// Failed is closed if the start failed; Err says why.
func (s *Service) Failed() <-chan struct{} { return s.life.failed }

// Err returns why the start failed, or nil.
func (s *Service) Err() error {
	select {
	case <-s.life.failed:
		return s.life.err
	default:
		return nil
	}
}

// Serving is closed once the engine serves, before or when Ready is.
func (s *Service) Serving() <-chan struct{} { return s.life.serving }

// IsServing reports whether the engine serves the jobs it has loaded: the
// server is ready for workers and producers.
func (s *Service) IsServing() bool {
	select {
	case <-s.life.serving:
		return true
	default:
		return false
	}
}

// IsReady reports whether the service serves every call.
func (s *Service) IsReady() bool {
	select {
	case <-s.life.ready:
		return true
	default:
		return false
	}
}

// Wait waits for the start to end: nil once ready, its error if it failed.
func (s *Service) Wait(ctx context.Context) error {
	select {
	case <-s.life.ready:
		return nil
	case <-s.life.failed:
		return s.life.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ready returns nil once the service serves every call. While the engine
// serves the jobs loaded so far, it waits for the rest (seconds at
// millions of jobs) or for ctx; before the engine serves it returns
// ErrStarting.
func (s *Service) ready(ctx context.Context) error {
	if s.IsReady() {
		return nil
	}
	if err := s.serving(); err != nil {
		return err
	}
	select {
	case <-s.life.ready:
		return nil
	case <-s.life.failed:
		return refuse(KindStarting, "server is starting")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serving returns ErrStarting until the engine serves: the calls that
// need only the jobs loaded so far (a take, an acknowledgement, a failure,
// an enqueue of plain jobs) go ahead while the rest load.
func (s *Service) serving() error {
	if s.IsServing() {
		return nil
	}
	return refuse(KindStarting, "server is starting")
}

// loading reports whether the engine serves but is not loaded whole: a
// job it does not know may yet come.
func (s *Service) loading() bool { return s.IsServing() && !s.IsReady() }

// Close ends a start in progress and closes the store; call it once every
// transport has stopped calling.
func (s *Service) Close() error {
	s.life.cancel()
	<-s.life.done
	if s.IsReady() {
		<-s.cron.done // a fire under way commits first
	}
	var err error
	s.closed.Do(func() {
		s.batches.Close()
		if s.store != nil {
			err = s.store.Close()
		}
	})
	return err
}

// Store returns the store (for maintenance and metrics); nil before ready.
func (s *Service) Store() Store {
	if !s.IsReady() {
		return nil
	}
	return s.store
}

func (s *Service) nowMs() int64 { return s.clock.Now().UnixMilli() }
