// Package server is zizq's HTTP transport, the API port and the admin port:
// a handler decodes a request (package api), calls the core (server/core),
// which owns every job and every decision, and encodes the answer; errors
// become statuses in one place (respond.go). It also opens the store a
// server runs on (open.go) and, on PostgreSQL, runs a cluster's node: the
// election, the fence of the leader's term, and the forwarding of a
// follower's requests to the leader (cluster.go). It holds no job state of
// its own. docs/ARCHITECTURE.md follows a request through it.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zizq/zizq/internal/buildinfo"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/core"
)

// Version is the Zizq API level this server speaks.
var Version = buildinfo.Version

// Config holds the HTTP layer's settings.
type Config struct {
	HeartbeatInterval  time.Duration
	MaxBodyBytes       int64
	MaxTakeConnections int
	// WriteTimeout bounds each write to a take stream, so a stalled reader
	// is dropped (and its jobs requeued) instead of pinning them forever.
	WriteTimeout time.Duration
	// ReadHeaderTimeout drops a connection that has not sent a whole
	// request header (or finished its TLS handshake) in time; IdleTimeout
	// one that sends no next request. 0 means the defaults.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// TLS, when set, makes Serve speak TLS, offering h2 and http/1.1 by
	// ALPN, instead of cleartext HTTP/1.1 and h2c (see LoadTLS).
	TLS *tls.Config
	// AdminTLS is the admin port's TLS (ServeAdmin), as TLS is the API's.
	AdminTLS *tls.Config
	// Events tune the admin port's event stream.
	Events core.EventOptions
	// EventWriteTimeout bounds each write to an event stream: a dashboard
	// that reads nothing for that long is dropped.
	EventWriteTimeout time.Duration
	// Pprof serves the runtime's profiles on the admin port, under
	// /debug/pprof/ (admin.go); off by default.
	Pprof   bool
	Version string
}

// DefaultConfig returns the defaults of `zizq serve`.
func DefaultConfig() Config {
	return Config{
		HeartbeatInterval:  3 * time.Second,
		MaxBodyBytes:       16 << 20,
		MaxTakeConnections: 10000,
		WriteTimeout:       30 * time.Second,
		ReadHeaderTimeout:  defaultReadHeaderTimeout,
		IdleTimeout:        defaultIdleTimeout,
		EventWriteTimeout:  30 * time.Second,
		Version:            Version,
	}
}

// Server serves the Zizq wire API.
type Server struct {
	cfg    Config
	core   *core.Service
	clock  clock.Clock
	log    *slog.Logger
	router *router
	admin  *router // the admin port's (admin.go)
	// started is when the server was made (uptime of the event stream).
	started time.Time

	takes    atomic.Int64
	closing  chan struct{}
	closeOne sync.Once

	// OnReady hooks (start.go).
	hooksMu   sync.Mutex
	hooks     []func()
	hooksRan  bool
	hooksDone chan struct{}

	metrics *metrics // Prometheus metrics (metrics.go)
	// role tells the server's place in its cluster (cluster.go).
	role    func() Role
	backups atomic.Int32 // backups in progress (backup.go)
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

func (s *Server) routes() {
	r := s.router
	r.handle("GET", "/health", s.health)
	r.handle("GET", "/version", s.version)
	r.handle("GET", "/ready", s.readyz)
	r.handle("GET", "/metrics", s.metricsHandler)
	r.handle("POST", "/jobs/{id}/retry", s.retry)
	r.handle("GET", "/stats", s.stats)
	r.handle("GET", "/queues", s.queues)
	r.handle("POST", "/reset", s.reset)

	r.handle("POST", "/jobs", s.enqueue)
	r.handle("GET", "/jobs", s.listJobs)
	r.handle("DELETE", "/jobs", s.deleteJobs)
	r.handle("PATCH", "/jobs", s.patchJobs)
	r.handle("POST", "/jobs/bulk", s.enqueueBulk)
	r.handle("GET", "/jobs/count", s.countJobs)
	r.handle("GET", "/jobs/take", s.take)
	r.handle("POST", "/jobs/success", s.ackBulk)
	r.handle("GET", "/jobs/{id}", s.getJob)
	r.handle("DELETE", "/jobs/{id}", s.deleteJob)
	r.handle("PATCH", "/jobs/{id}", s.patchJob)
	r.handle("POST", "/jobs/{id}/success", s.ack)
	r.handle("POST", "/jobs/{id}/failure", s.failure)
	r.handle("GET", "/jobs/{id}/errors", s.listErrors)
	r.handle("GET", "/jobs/{id}/errors/{attempt}", s.getError)
	r.handle("GET", "/jobs/{id}/why", s.why)

	r.handle("GET", "/budgets", s.listBudgets)
	r.handle("GET", "/budgets/{key}", s.getBudget)
	r.handle("POST", "/budgets/{key}", s.createBudget)
	r.handle("PUT", "/budgets/{key}", s.putBudget)
	r.handle("PATCH", "/budgets/{key}", s.patchBudget)
	r.handle("DELETE", "/budgets/{key}", s.deleteBudget)
	r.handle("GET", "/budgets/{key}/forecast", s.forecast)
	r.handle("POST", "/budgets/{key}/throttle", s.throttle)

	s.bindingRoutes()
	s.cronRoutes()

	// These answer while the server starts (a take waits for it); /metrics
	// and /backup negotiate no format (Prometheus text, tar.gz).
	r.early("/health", "/version", "/ready", "/metrics", "/jobs/take")
	r.raw("/metrics")
}

// Serve accepts HTTP/1.1 and cleartext HTTP/2 (prior knowledge) on l, or
// TLS when Config.TLS is set, until ctx is cancelled, then shuts down
// gracefully: take streams end and their jobs go back to ready.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	return s.serveUntil(ctx, s.httpServer(s.router), l, s.cfg.TLS)
}

// serveUntil serves hs on l until ctx ends, Close is called or the start
// fails, then shuts it down.
func (s *Server) serveUntil(ctx context.Context, hs *http.Server, l net.Listener, tlsCfg *tls.Config) error {
	errc := make(chan error, 1)
	go func() { errc <- s.serveOn(hs, l, tlsCfg) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case <-s.closing:
	case <-s.core.Failed():
	}
	s.Close()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return s.startError() // nil unless the start failed
}

// Close ends every take stream; their jobs return to ready.
func (s *Server) Close() {
	s.closeOne.Do(func() { close(s.closing) })
}

func (s *Server) nowMs() int64 { return s.clock.Now().UnixMilli() }

// newServer returns a server with no core yet (Start gives it one).
func newServer(cfg Config, clk clock.Clock, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{cfg: cfg, clock: clk, log: log, started: clk.Now(), closing: make(chan struct{}), hooksDone: make(chan struct{}), role: loneRole}
	s.metrics = newMetrics(s)
	s.router = &router{s: s}
	s.routes()
	s.admin = &router{s: s}
	s.adminRoutes()
	return s
}
