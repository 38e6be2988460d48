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

// Opener opens a server's store (server.Options.OpenStore).
type Opener = func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error)

// SQLite keeps a server on SQLite whatever the environment: for the tests
// of what only a SQLite store has (its file, its faults, its pragmas). It
// clears OpenStore, which StartIn then sets to SQLite in the server's
// directory.
func SQLite(o *server.Options) { o.OpenStore = nil }

// SQLiteStore opens the SQLite store in dir, tuned by so (its OnCommit is
// called before the server's hook; a nil Logger logs nowhere).
func SQLiteStore(dir string, so sqlite.Options) Opener {
	if so.Logger == nil {
		so.Logger = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
		o := so // each open hooks its own server
		o.OnCommit = bothHooks(so.OnCommit, onCommit)
		return sqlite.Open(ctx, dir, o)
	}
}

// Store opens the store of a test server on dir: SQLite in dir, or with
// ZIZQ_TEST_STORE=postgres the PostgreSQL schema of dir. so tunes it: its
// commit modes, batch size, commit hook and logger apply to either store.
func Store(t testing.TB, dir string, so sqlite.Options) Opener {
	t.Helper()
	if !Postgres() {
		return SQLiteStore(dir, so)
	}
	dsn := pgtest.SchemaFor(t, dir)
	return func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
		return openPostgres(ctx, dsn, so, onCommit)
	}
}

// openPostgres opens the PostgreSQL store at dsn as Store does.
func openPostgres(ctx context.Context, dsn string, so sqlite.Options, onCommit func(store.CommitInfo)) (store.Store, error) {
	if so.Logger == nil {
		so.Logger = slog.New(slog.DiscardHandler)
	}
	return postgres.Open(ctx, postgres.Options{
		URL: dsn, DefaultMode: so.DefaultMode, EnqueueMode: so.EnqueueMode,
		BatchSize: so.BatchSize, MaxConns: 4, Logger: so.Logger, OnCommit: bothHooks(so.OnCommit, onCommit),
		Archive: sqlite.ArchiveBody{},
	})
}

// bothHooks calls a, then b (either may be nil).
func bothHooks(a, b func(store.CommitInfo)) func(store.CommitInfo) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(c store.CommitInfo) {
		a(c)
		b(c)
	}
}

// OpenStore opens the store a test server on dir uses (SQLite in dir, or
// the PostgreSQL schema of dir), with the server stopped: tests leave it as
// a crash would and start the server again.
func OpenStore(t testing.TB, dir string) store.Store {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	var (
		st  store.Store
		err error
	)
	if Postgres() {
		st, err = postgres.Open(context.Background(), postgres.Options{URL: pgtest.SchemaFor(t, dir), MaxConns: 2, Logger: quiet, Archive: sqlite.ArchiveBody{}})
	} else {
		st, err = sqlite.Open(context.Background(), dir, sqlite.Options{Logger: quiet})
	}
	require.NoError(t, err)
	return st
}

// SQLiteDB is the SQLite store of a running server (its simulated faults);
// the test fails if the server has another.
func SQLiteDB(t testing.TB, srv *server.Server) *sqlite.DB {
	t.Helper()
	db, ok := srv.Core().Store().(*sqlite.DB)
	require.True(t, ok, "the server's store is %T, not SQLite", srv.Core().Store())
	return db
}

// Options returns the defaults of `zizq serve` on dir, logging nowhere,
// over SQLite in dir.
func Options(dir string) server.Options {
	quiet := slog.New(slog.DiscardHandler)
	return server.Options{
		OpenStore: SQLiteStore(dir, sqlite.Options{Logger: quiet}),
		Engine:    engine.DefaultConfig(),
		HTTP:      server.DefaultConfig(),
		Logger:    quiet,
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
	return startIn(t, dir, true, tune...)
}

// StartingIn is StartIn returning at once, the store still loading: for
// the tests of what a starting server answers.
func StartingIn(t testing.TB, dir string, tune ...func(*server.Options)) *Server {
	t.Helper()
	return startIn(t, dir, false, tune...)
}

func startIn(t testing.TB, dir string, wait bool, tune ...func(*server.Options)) *Server {
	t.Helper()
	opts := Options(dir)
	// The store logs where the tunes have the server log.
	opts.OpenStore = nil
	if Postgres() {
		dsn := pgtest.SchemaFor(t, dir)
		opts.OpenStore = func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
			return openPostgres(ctx, dsn, sqlite.Options{Logger: opts.Logger}, onCommit)
		}
	}
	for _, f := range tune {
		f(&opts)
	}
	if opts.OpenStore == nil { // SQLite asked for, or the default
		opts.OpenStore = SQLiteStore(dir, sqlite.Options{Logger: opts.Logger})
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := server.Start(ctx, opts)
	if wait {
		if err := srv.Core().Wait(ctx); err != nil {
			_ = srv.CloseStore()
			require.NoError(t, err)
		}
	}
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
