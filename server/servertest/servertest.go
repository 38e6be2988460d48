// Package servertest starts real zizq servers for tests of any package: on
// 127.0.0.1:0, over a SQLite file in a temporary directory, stopped (and the
// store closed) when the test ends. With ZIZQ_TEST_STORE=postgres (and
// ZIZQ_TEST_DATABASE_URL) the servers run on PostgreSQL instead, each data
// directory mapped to a schema of its own (a restart on the same directory
// finds its data); the tests of what only SQLite has ask for it with
// SQLite.
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
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/postgres"
	"github.com/zizq/zizq/store/postgres/pgtest"
	"github.com/zizq/zizq/store/sqlite"
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

// Postgres reports whether the test servers run on PostgreSQL.
func Postgres() bool { return pgtest.Harness() }

// SQLite keeps a server on SQLite whatever the environment: for the tests
// of what only a SQLite store has (its file, its faults, its pragmas).
func SQLite(o *server.Options) { o.OpenStore = nil }

// OpenStore opens the store a test server on dir uses (SQLite in dir, or
// the PostgreSQL schema of dir), with the server stopped: tests leave it as
// a crash would and start the server again.
func OpenStore(t testing.TB, dir string) store.Store {
	t.Helper()
	var (
		st  store.Store
		err error
	)
	quiet := slog.New(slog.DiscardHandler)
	if Postgres() {
		st, err = postgres.Open(context.Background(), postgres.Options{URL: pgtest.SchemaFor(t, dir), MaxConns: 2, Logger: quiet, Archive: sqlite.ArchiveBody{}})
	} else {
		st, err = sqlite.Open(context.Background(), dir, sqlite.Options{Logger: quiet})
	}
	require.NoError(t, err)
	return st
}

// usePostgres makes o open a PostgreSQL store on the schema of dir.
func usePostgres(t testing.TB, o *server.Options, dir string) {
	t.Helper()
	dsn := pgtest.SchemaFor(t, dir)
	o.OpenStore = func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
		return postgres.Open(ctx, postgres.Options{
			URL: dsn, DefaultMode: o.Store.DefaultMode, EnqueueMode: o.Store.EnqueueMode,
			BatchSize: o.Store.BatchSize, MaxConns: 4, Logger: o.Logger, OnCommit: onCommit,
			Archive: sqlite.ArchiveBody{},
		})
	}
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
	if Postgres() {
		usePostgres(t, &opts, dir)
	}
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
