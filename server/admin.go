package server

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
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

// AdminHandler returns the admin port's HTTP handler: the admin routes,
// and Go's profiles under /debug/pprof/ when Config.Pprof is set.
func (s *Server) AdminHandler() http.Handler { return s.withProfiles(s.admin) }

// withProfiles adds the runtime's profiles to an admin handler when
// Config.Pprof is set. A cluster's node adds them to its own admin port,
// so that each process profiles itself, a follower too.
func (s *Server) withProfiles(h http.Handler) http.Handler {
	if !s.cfg.Pprof {
		return h
	}
	return withPprof(h)
}

// pprofPrefix is where the admin port serves the runtime's profiles.
const pprofPrefix = "/debug/pprof/"

// withPprof serves net/http/pprof's index, profiles and traces under
// pprofPrefix and everything else from next. The profiles are off by
// default: a CPU profile costs the server while it runs, and a heap
// profile names the program's internals, so an operator turns them on
// (--pprof) for the time of an investigation, on the port that already
// is the operator's.
func withPprof(next http.Handler) http.Handler {
	named := map[string]http.HandlerFunc{
		"cmdline": pprof.Cmdline,
		"profile": pprof.Profile,
		"symbol":  pprof.Symbol,
		"trace":   pprof.Trace,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, pprofPrefix)
		switch {
		case r.URL.Path+"/" == pprofPrefix:
			http.Redirect(w, r, pprofPrefix, http.StatusMovedPermanently)
		case !ok:
			next.ServeHTTP(w, r)
		case named[name] != nil:
			named[name](w, r)
		default:
			// The index at "", and every runtime profile by its name
			// (heap, goroutine, allocs, block, mutex, threadcreate).
			pprof.Index(w, r)
		}
	})
}

// ServeAdmin serves the admin port on l, TLS when Config.AdminTLS is set,
// until ctx is cancelled (or Close is called), then shuts it down: event
// streams end.
func (s *Server) ServeAdmin(ctx context.Context, l net.Listener) error {
	hs := s.httpServer(s.AdminHandler())
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
