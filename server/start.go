package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// Readiness. A server returned by Start answers at once, while it opens its
// store and rebuilds the engine in the background (which takes a while for a
// large store):
//
//   - GET /health answers 200 from the start (the process is alive), GET
//     /ready 503 until the engine is rebuilt, then 200. /version and
//     /metrics answer too.
//   - Take streams are accepted and wait, with heartbeats, until the engine
//     is ready; then jobs flow as usual.
//   - Every other request answers 503 {"error":"server is starting"} with
//     Retry-After: 1.
//
// s.engine and s.db are written once, before life.ready is closed, and read
// only by requests that have seen it closed: the channel orders them.

// lifecycle tracks a server's start.
type lifecycle struct {
	ready  chan struct{} // closed once the engine is rebuilt
	failed chan struct{} // closed if the start failed; err says why
	done   chan struct{} // closed when the start goroutine has returned
	err    error
	cancel context.CancelFunc

	mu      sync.Mutex
	onReady []func()
}

func (l *lifecycle) init() {
	l.ready = make(chan struct{})
	l.failed = make(chan struct{})
	l.done = make(chan struct{})
	l.cancel = func() {}
}

// Start returns a server over opts.DataDir at once and opens its store,
// returns the last run's in-flight jobs to ready and rebuilds the engine in
// the background. Serve it straight away: it answers /health while it
// starts and everything once Ready is closed. If the start fails, Serve
// returns its error. CloseStore (after Serve) also ends a start still
// running.
func Start(ctx context.Context, opts Options) *Server {
	opts = opts.withDefaults()
	s := newServer(opts.HTTP, opts.Clock, opts.Logger)
	ctx, s.life.cancel = context.WithCancel(ctx)
	go s.start(ctx, opts)
	return s
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Store.Logger = o.Logger
	return o
}

// newServer returns a server that is not ready yet.
func newServer(cfg Config, clk clock.Clock, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{cfg: cfg, clock: clk, log: log, closing: make(chan struct{})}
	s.life.init()
	s.metrics = newMetrics(s)
	s.router = &router{s: s}
	s.routes()
	return s
}

// start opens the store and rebuilds the engine, then declares the server
// ready (or failed).
func (s *Server) start(ctx context.Context, opts Options) {
	defer close(s.life.done)
	opts.Engine.OnDispatch = chainDispatch(opts.Engine.OnDispatch, s.metrics.onDispatch)
	opts.Store.OnCommit = chainCommit(opts.Store.OnCommit, s.metrics.onCommit)
	db, err := sqlite.Open(ctx, opts.DataDir, opts.Store)
	if err != nil {
		s.startFailed(fmt.Errorf("open store: %w", err))
		return
	}
	if opts.beforeRestore != nil {
		opts.beforeRestore(ctx)
	}
	e, err := restore(ctx, db, opts)
	if err != nil {
		_ = db.Close()
		s.startFailed(err)
		return
	}
	s.attach(e, db)
}

// attach makes the server serve e and db, and ready.
func (s *Server) attach(e *engine.Engine, db *sqlite.DB) {
	s.engine, s.db = e, db
	s.life.mu.Lock()
	close(s.life.ready)
	hooks := s.life.onReady
	s.life.onReady = nil
	s.life.mu.Unlock()
	for _, f := range hooks {
		f()
	}
}

func (s *Server) startFailed(err error) {
	s.log.Error("server failed to start", "err", err)
	s.life.err = err
	close(s.life.failed)
}

// Ready is closed once the server serves every request.
func (s *Server) Ready() <-chan struct{} { return s.life.ready }

// OnReady calls f once the server is ready: at once if it is, else from the
// start goroutine (before CloseStore returns). f is never called if the
// start fails.
func (s *Server) OnReady(f func()) {
	s.life.mu.Lock()
	select {
	case <-s.life.ready:
		s.life.mu.Unlock()
		f()
		return
	default:
	}
	s.life.onReady = append(s.life.onReady, f)
	s.life.mu.Unlock()
}

// isReady reports whether the engine and store are in place.
func (s *Server) isReady() bool {
	select {
	case <-s.life.ready:
		return true
	default:
		return false
	}
}

// startError returns why the start failed, or nil.
func (s *Server) startError() error {
	select {
	case <-s.life.failed:
		return s.life.err
	default:
		return nil
	}
}

// awaitStart waits for a started server to be ready or to fail.
func (s *Server) awaitStart(ctx context.Context) error {
	select {
	case <-s.life.ready:
		return nil
	case <-s.life.failed:
		return s.life.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readyz answers GET /ready: 200 once the engine is rebuilt, 503 before.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.isReady() {
		s.notReady(w, r)
		return
	}
	s.respond(w, r, http.StatusOK, api.Health{Status: "ready"})
}

// notReady answers a request that needs the engine while it is rebuilt.
func (s *Server) notReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "1")
	s.writeError(w, r, http.StatusServiceUnavailable, "server is starting")
}

// holdTakeUntilReady answers a take stream opened while the server starts
// and holds it, with heartbeats, until the engine is ready. It returns the
// writer to go on with (its header is sent), or nil if the stream ended
// first.
func (s *Server) holdTakeUntilReady(w http.ResponseWriter, r *http.Request, sf api.StreamFormat) http.ResponseWriter {
	w.Header().Set("Content-Type", api.StreamContentType(sf))
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if !s.writeFrames(rc, w, nil) {
		return nil
	}
	heartbeat := time.NewTicker(s.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	for {
		select {
		case <-s.life.ready:
			return headerSent{w}
		case <-s.life.failed:
			return nil
		case <-r.Context().Done():
			return nil
		case <-s.closing:
			return nil
		case <-heartbeat.C:
			if !s.writeFrames(rc, w, api.Heartbeat(sf)) {
				return nil
			}
		}
	}
}

// headerSent is a ResponseWriter whose header has been written: later
// WriteHeader calls are dropped rather than logged as superfluous.
type headerSent struct{ http.ResponseWriter }

func (headerSent) WriteHeader(int) {}

// Unwrap lets http.ResponseController reach the connection.
func (w headerSent) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func chainDispatch(a, b func(store.Job, time.Time, int64)) func(store.Job, time.Time, int64) {
	if a == nil {
		return b
	}
	return func(j store.Job, at time.Time, waitingSince int64) {
		a(j, at, waitingSince)
		b(j, at, waitingSince)
	}
}

func chainCommit(a, b func(sqlite.CommitInfo)) func(sqlite.CommitInfo) {
	if a == nil {
		return b
	}
	return func(c sqlite.CommitInfo) {
		a(c)
		b(c)
	}
}

// early marks routes that answer while the server starts.
func (rt *router) early(patterns ...string) { rt.mark(patterns, func(r *route) { r.early = true }) }

// raw marks routes that negotiate their own format.
func (rt *router) raw(patterns ...string) { rt.mark(patterns, func(r *route) { r.raw = true }) }

func (rt *router) mark(patterns []string, set func(*route)) {
	for _, p := range patterns {
		segs := strings.Trim(p, "/")
		for _, r := range rt.routes {
			if strings.Join(r.segs, "/") == segs {
				set(r)
			}
		}
	}
}
