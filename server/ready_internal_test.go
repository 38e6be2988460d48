package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// sqliteIn opens the SQLite store in dir, as `zizq serve` does.
func sqliteIn(dir string) func(context.Context, func(store.CommitInfo)) (store.Store, error) {
	return func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
		return sqlite.Open(ctx, dir, sqlite.Options{Logger: slog.New(slog.DiscardHandler), OnCommit: onCommit})
	}
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

// While the engine is rebuilt the server answers /health and /ready (503),
// holds take streams and refuses the rest with 503; then it serves.
func TestStart_ReadyOnceRestored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	quiet := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	// A store with a job waiting.
	db, err := sqlite.Open(ctx, dir, sqlite.Options{Logger: quiet})
	require.NoError(t, err)
	job := store.Job{ID: "03hbspbwnw9m04mdludj16jsc", Type: "t", Queue: "q", Priority: 1, Status: store.Ready, Payload: []byte("{}"), ReadyAt: 1}
	require.NoError(t, db.Append(store.InsertJob(job)).Wait(ctx))
	require.NoError(t, db.Close())

	gate := make(chan struct{})
	cfg := DefaultConfig()
	cfg.HeartbeatInterval = 50 * time.Millisecond
	srv := Start(ctx, Options{
		OpenStore: sqliteIn(dir), Engine: engine.DefaultConfig(), HTTP: cfg, Logger: quiet,
		beforeRestore: func(context.Context) { <-gate },
	})
	var hooked atomic.Bool
	srv.OnReady(func() { hooked.Store(true) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, l) }()
	url := "http://" + l.Addr().String()

	status, body, _ := get(t, url+"/health")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"status":"ok"}`, body)
	status, body, hdr := get(t, url+"/ready")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.JSONEq(t, `{"error":"server is starting"}`, body)
	require.Equal(t, "1", hdr.Get("Retry-After"))
	for _, path := range []string{"/jobs", "/stats", "/budgets", "/jobs/" + job.ID} {
		status, body, _ = get(t, url+path)
		require.Equal(t, http.StatusServiceUnavailable, status, path)
		require.JSONEq(t, `{"error":"server is starting"}`, body, path)
	}
	status, body, _ = get(t, url+"/metrics")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "\nzizq_ready 0\n")
	status, _, _ = get(t, url+"/version")
	require.Equal(t, http.StatusOK, status)

	// A take stream is answered and held with heartbeats.
	resp, err := http.Get(url + "/jobs/take?queue=q")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	lines := bufio.NewReader(resp.Body)
	line, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\n", line, "a heartbeat while the server starts")
	require.False(t, hooked.Load())

	close(gate)
	select {
	case <-srv.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("not ready")
	}
	require.Eventually(t, hooked.Load, 5*time.Second, time.Millisecond, "OnReady hooks run once ready")
	status, body, _ = get(t, url+"/ready")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"status":"ready"}`, body)
	// The held stream now gets the job.
	for {
		line, err = lines.ReadString('\n')
		require.NoError(t, err)
		if line != "\n" {
			break
		}
	}
	var got api.Job
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(line)), &got))
	require.Equal(t, job.ID, got.ID)
	status, _, _ = get(t, url+"/jobs")
	require.Equal(t, http.StatusOK, status)

	stop()
	require.NoError(t, <-served)
	require.NoError(t, srv.CloseStore())
}

// A start that fails makes Serve return its error; one cut short by
// CloseStore leaves nothing open.
func TestStart_Failures(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.DiscardHandler)
	ctx := context.Background()

	// A data directory that is a file cannot be opened.
	file := t.TempDir() + "/file"
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	srv := Start(ctx, Options{OpenStore: sqliteIn(file), Engine: engine.DefaultConfig(), HTTP: DefaultConfig(), Logger: quiet})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = srv.Serve(ctx, l)
	require.ErrorContains(t, err, "open store")
	require.NoError(t, srv.CloseStore())
	_, err = Open(ctx, Options{OpenStore: sqliteIn(file), Engine: engine.DefaultConfig(), HTTP: DefaultConfig(), Logger: quiet})
	require.ErrorContains(t, err, "open store")

	// A server given no store to open says so.
	_, err = Open(ctx, Options{Engine: engine.DefaultConfig(), HTTP: DefaultConfig(), Logger: quiet})
	require.ErrorContains(t, err, "no store: Options.OpenStore is not set")

	// CloseStore during the start ends it.
	held := make(chan struct{})
	srv = Start(ctx, Options{
		OpenStore: sqliteIn(t.TempDir()), Engine: engine.DefaultConfig(), HTTP: DefaultConfig(), Logger: quiet,
		beforeRestore: func(ctx context.Context) { close(held); <-ctx.Done() },
	})
	<-held
	require.NoError(t, srv.CloseStore())
	select {
	case <-srv.Ready():
		t.Fatal("a cancelled start is not ready")
	default:
	}
}
