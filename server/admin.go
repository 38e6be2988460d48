package server

import (
	"context"
	"net"
	"net/http"
)

// The admin port (docs/API.md §The admin port): the event stream of
// dashboards, backups and compaction, on a listener of its own. It listens on
// loopback by default and takes its own (m)TLS, because what it serves must
// not reach every worker that can reach the API port: a backup holds every
// payload.

func (s *Server) adminRoutes() {
	r := s.admin
	r.handle("GET", "/events", s.events)
	r.handle("POST", "/backup", s.backup)
	r.handle("POST", "/compact", s.compact)
	// None negotiates a body format: a WebSocket, tar.gz, nothing.
	r.raw("/events", "/backup", "/compact")
}

// AdminHandler returns the admin port's HTTP handler.
func (s *Server) AdminHandler() http.Handler { return s.admin }

// ServeAdmin serves the admin port on l, TLS when Config.AdminTLS is set,
// until ctx is cancelled (or Close is called), then shuts it down: event
// streams end.
func (s *Server) ServeAdmin(ctx context.Context, l net.Listener) error {
	hs := s.httpServer(s.admin)
	return s.serveUntil(ctx, hs, l, s.cfg.AdminTLS)
}

// compact answers POST /compact: 204 once the store is compacted, or 500
// "compact failed" in plain text (Zizq's answers).
func (s *Server) compact(w http.ResponseWriter, r *http.Request) {
	if err := s.core.Compact(r.Context()); err != nil {
		s.log.Error("compact failed", "err", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("compact failed\n"))
		return
	}
	s.log.Info("store compacted")
	noContent(w)
}
