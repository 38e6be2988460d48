package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/zizq/zizq/api"
)

// Readiness. A server returned by Start answers at once, while its core
// opens the store and rebuilds the engine in the background (which takes a
// while for a large store):
//
//   - GET /health answers 200 from the start (the process is alive), GET
//     /ready 503 until the engine serves, then 200. /version and /metrics
//     answer too.
//   - Take streams are accepted and wait, with heartbeats, until the engine
//     serves; then jobs flow as usual.
//   - Every other request answers 503 {"error":"server is starting"} with
//     Retry-After: 1 until the engine serves.
//
// The engine serves once the store's first jobs are loaded, when the
// store's live jobs are plain (no unique key, no batch; no family budget),
// else once it is loaded whole. Between the two, takes, acknowledgements,
// failures and enqueues of plain jobs are served at once, in the one order
// (the engine's Restorer.Serve says why it holds), and every other request
// waits for the rest of the load.

// Ready is closed once the server serves every request.
func (s *Server) Ready() <-chan struct{} { return s.core.Ready() }

// OnReady calls f once the server is ready: at once if it is, else from the
// goroutine that waits for the start (before CloseStore returns). f is
// never called if the start fails.
func (s *Server) OnReady(f func()) {
	s.hooksMu.Lock()
	if !s.hooksRan {
		s.hooks = append(s.hooks, f)
		s.hooksMu.Unlock()
		return
	}
	s.hooksMu.Unlock()
	if s.core.IsReady() {
		f()
	}
}

// runReadyHooks waits for the start to end and runs the OnReady hooks if it
// succeeded.
func (s *Server) runReadyHooks() {
	defer close(s.hooksDone)
	ok := s.core.Wait(context.Background()) == nil
	s.hooksMu.Lock()
	hooks := s.hooks
	s.hooks, s.hooksRan = nil, true
	s.hooksMu.Unlock()
	if ok {
		for _, f := range hooks {
			f()
		}
	}
}

// isReady reports whether the engine and store are in place, the engine
// loaded whole.
func (s *Server) isReady() bool { return s.core.IsReady() }

// isServing reports whether the engine serves, loaded whole or not.
func (s *Server) isServing() bool { return s.core.IsServing() }

// startError returns why the start failed, or nil.
func (s *Server) startError() error { return s.core.Err() }

// readyz answers GET /ready: 200 once the engine serves, 503 before.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if !s.isServing() {
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
// and holds it, with heartbeats, until the engine serves. It returns the
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
		case <-s.core.Serving():
			return headerSent{w}
		case <-s.core.Failed():
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
