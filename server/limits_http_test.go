package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
)

// dial opens a raw TCP connection to the test server.
func (tb *testBundle) dial(t *testing.T) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(tb.url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// requireDropped asserts that the server closes conn between min and max
// from start, sending nothing (more).
func requireDropped(t *testing.T, conn net.Conn, rd io.Reader, start time.Time, min, max time.Duration) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(start.Add(max+5*time.Second)))
	n, err := rd.Read(make([]byte, 1))
	elapsed := time.Since(start)
	require.Zero(t, n, "the server sent something")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection for %s", elapsed)
	require.Error(t, err)
	require.GreaterOrEqual(t, elapsed, min)
	require.Less(t, elapsed, max)
}

func TestServer_ReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.HTTP.ReadHeaderTimeout = 200 * time.Millisecond })
	for _, c := range []struct{ name, sent string }{
		{"Nothing", ""},
		{"HalfAHeader", "GET /health HTTP/1.1\r\nHost: x\r\nAccept: appl"},
		{"NoEnd", "GET /health HTTP/1.1\r\nHost: x\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn := tb.dial(t)
			start := time.Now()
			_, err := io.WriteString(conn, c.sent)
			require.NoError(t, err)
			requireDropped(t, conn, conn, start, 150*time.Millisecond, 3*time.Second)
		})
	}
	// A slow but complete client is served.
	conn := tb.dial(t)
	for _, part := range []string{"GET /health HTTP/1.1\r\n", "Host: x\r\n", "\r\n"} {
		_, err := io.WriteString(conn, part)
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestServer_IdleTimeout(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.HTTP.IdleTimeout = 200 * time.Millisecond })
	conn := tb.dial(t)
	rd := bufio.NewReader(conn)
	for range 2 { // the connection is kept alive between requests...
		_, err := io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(rd, nil)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	// ...and dropped once idle for longer than the timeout.
	requireDropped(t, conn, rd, time.Now(), 150*time.Millisecond, 3*time.Second)
}

func TestTake_MaxTakeConnections(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.HTTP.MaxTakeConnections = 2 })
	first := tb.take(t, "")
	tb.take(t, "")
	for _, accept := range []string{"", "application/x-ndjson", "text/event-stream"} {
		r := tb.req(t, "GET", "/jobs/take", nil, "Accept", accept)
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.Equal(t, `{"error":"too many take connections: the limit is 2"}`, string(r.body))
	}
	// A closed stream frees its place.
	first.close()
	require.Eventually(t, func() bool { return takeStatus(t, tb) == http.StatusOK }, 5*time.Second, 20*time.Millisecond)
}

// takeStatus opens a take stream, returns the status of its answer and
// closes it.
func takeStatus(t *testing.T, tb *testBundle) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, "GET", tb.url+"/jobs/take", nil)
	require.NoError(t, err)
	resp, err := tb.h1.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

// TestTake_SlowReaderIsBoundedAndDropped opens a take stream with no
// prefetch limit and no global limit whose reader never reads. The jobs the
// server hands it stay bounded (the frames queued for it are capped, then
// the socket buffers, kept small here, fill), and once a write has waited
// longer than the write timeout the stream is dropped and every job it held
// is ready again.
func TestTake_SlowReaderIsBoundedAndDropped(t *testing.T) {
	t.Parallel()
	const (
		jobs         = 200
		pending      = 8
		writeTimeout = 300 * time.Millisecond
	)
	tb := setupSmallSendBuffers(t, func(o *server.Options) {
		o.Engine.GlobalInFlightLimit = 0
		o.Engine.MaxPendingFrames = pending
		o.HTTP.WriteTimeout = writeTimeout
	})
	payload := `"` + strings.Repeat("x", 4096) + `"`
	var b strings.Builder
	b.WriteString(`{"jobs":[`)
	for k := range jobs {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"t","queue":"slow","payload":%s}`, payload)
	}
	b.WriteString(`]}`)
	r := tb.req(t, "POST", "/jobs/bulk", b.String())
	require.Equal(t, http.StatusCreated, r.status, "%.200s", r.body)

	conn := tb.dial(t)
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	_, err := io.WriteString(conn, "GET /jobs/take?prefetch=0&queue=slow HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)

	// While the reader stalls, what the stream holds stays bounded...
	maxInFlight := int64(0)
	dropped := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		counts := stats(t, tb).Jobs
		maxInFlight = max(maxInFlight, counts.InFlight)
		if maxInFlight > 0 && counts.InFlight == 0 {
			// ...and then the stream is dropped, its jobs ready again.
			require.Equal(t, int64(jobs), counts.Ready)
			dropped = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.True(t, dropped, "the stalled stream was not dropped (in flight at most %d)", maxInFlight)
	// Queued frames, one batch being written, and what the small socket
	// buffers hold.
	require.Less(t, maxInFlight, int64(jobs/4), "a stalled reader made the server hold too many jobs")
	t.Logf("a stalled reader held at most %d of %d jobs", maxInFlight, jobs)

	// The server has closed the connection: once the reader reads again, it
	// gets what the socket buffers held and then the end, or a reset (the
	// server's kernel may have given up on a window that stayed shut, and
	// answers anything sent after that with a reset).
	_, _ = io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	n, err := io.Copy(io.Discard, conn)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "connection still open after %d bytes", n)
}

// setupSmallSendBuffers is setup with a listener whose connections have
// small kernel send buffers, so that a stalled reader is felt at once.
func setupSmallSendBuffers(t *testing.T, tune func(*server.Options)) *testBundle {
	t.Helper()
	opts := servertest.Options(t.TempDir()) // SQLite, as ever
	tune(&opts)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.Open(ctx, opts)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, smallSendBuffers{l}) }()
	tb := &testBundle{srv: srv, url: "http://" + l.Addr().String(), h1: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, srv.CloseStore())
		tb.h1.CloseIdleConnections()
	})
	return tb
}

type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// stats answers GET /stats.
func stats(t *testing.T, tb *testBundle) api.Stats {
	t.Helper()
	r := tb.req(t, "GET", "/stats", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var s api.Stats
	r.json(t, &s)
	return s
}
