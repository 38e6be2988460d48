// Package servertest starts real zizq servers for tests of any package: on
// 127.0.0.1:0, over a SQLite file in a temporary directory, stopped (and the
// store closed) when the test ends.
package servertest

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/engine"
)

// Server is a running test server.
type Server struct {
	URL string // http://127.0.0.1:<port>
	// AdminURL is its admin port's, on a port of its own (never 8901).
	AdminURL string
	Dir      string // its data directory
	Srv      *server.Server

	stop func()
}

// Options returns the defaults of `zizq serve` on dir, logging nowhere.
func Options(dir string) server.Options {
	return server.Options{
		DataDir: dir,
		Engine:  engine.DefaultConfig(),
		HTTP:    server.DefaultConfig(),
		Logger:  slog.New(slog.DiscardHandler),
	}
}

// Start serves a fresh data directory until the test ends; tune adjusts the
// options before the server opens.
func Start(t testing.TB, tune ...func(*server.Options)) *Server {
	t.Helper()
	return StartIn(t, t.TempDir(), tune...)
}

// StartIn serves an existing data directory (restart tests).
func StartIn(t testing.TB, dir string, tune ...func(*server.Options)) *Server {
	t.Helper()
	opts := Options(dir)
	for _, f := range tune {
		f(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, opts)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	al, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 2)
	go func() { done <- srv.Serve(ctx, l) }()
	go func() { done <- srv.ServeAdmin(ctx, al) }()
	scheme := "http://"
	if opts.HTTP.AdminTLS != nil {
		scheme = "https://"
	}
	s := &Server{URL: "http://" + l.Addr().String(), AdminURL: scheme + al.Addr().String(), Dir: dir, Srv: srv}
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		for range 2 {
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(15 * time.Second):
				t.Error("server did not stop")
			}
		}
		require.NoError(t, srv.CloseStore())
	}
	t.Cleanup(s.stop)
	return s
}

// Stop stops the server and closes its store now; it is idempotent.
func (s *Server) Stop() { s.stop() }
