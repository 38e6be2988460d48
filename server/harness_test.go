package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
)

// testBundle is a real server on 127.0.0.1:0 over a real SQLite file.
type testBundle struct {
	srv   *server.Server
	url   string
	admin string // the admin port's URL
	dir   string
	h1    *http.Client // HTTP/1.1
	h2    *http.Client // cleartext HTTP/2 with prior knowledge
	stop  func()
}

// setup starts a server; tune adjusts its options before it opens.
func setup(t *testing.T, tune ...func(*server.Options)) *testBundle {
	t.Helper()
	return setupIn(t, t.TempDir(), tune...)
}

// setupIn starts a server on an existing data directory (restart tests).
func setupIn(t *testing.T, dir string, tune ...func(*server.Options)) *testBundle {
	t.Helper()
	return setupTB(t, dir, tune...)
}

// setupStarting starts a server on dir without waiting for its store to
// load.
func setupStarting(t *testing.T, dir string, tune ...func(*server.Options)) *testBundle {
	t.Helper()
	return bundleOf(t, dir, servertest.StartingIn(t, dir, tune...))
}

func setupTB(t testing.TB, dir string, tune ...func(*server.Options)) *testBundle {
	t.Helper()
	return bundleOf(t, dir, servertest.StartIn(t, dir, tune...))
}

func bundleOf(t testing.TB, dir string, ts *servertest.Server) *testBundle {
	t.Helper()
	h2 := &http.Transport{}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2.Protocols = &protocols
	tb := &testBundle{
		srv: ts.Srv, url: ts.URL, admin: ts.AdminURL, dir: dir,
		h1: &http.Client{Transport: &http.Transport{}},
		h2: &http.Client{Transport: h2},
	}
	tb.stop = func() {
		ts.Stop()
		tb.h1.CloseIdleConnections()
		h2.CloseIdleConnections()
	}
	t.Cleanup(tb.stop)
	return tb
}

// reply is a response read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
	proto  string
}

func (r reply) json(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.body, v), "body: %s", r.body)
}

// errorText returns the "error" of a JSON error body, failing otherwise.
func (r reply) errorText(t *testing.T) string {
	t.Helper()
	var e api.Error
	require.NoError(t, json.Unmarshal(r.body, &e), "error body must be JSON: %q", r.body)
	require.NotEmpty(t, e.Error, "body: %s", r.body)
	return e.Error
}

// req sends a request. body may be nil, a string or []byte (sent as is
// with Content-Type application/json), or any other value (JSON-encoded).
func (tb *testBundle) req(t *testing.T, method, path string, body any, header ...string) reply {
	t.Helper()
	return tb.reqWith(t, tb.h1, method, path, body, header...)
}

func (tb *testBundle) reqWith(t *testing.T, c *http.Client, method, path string, body any, header ...string) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	r, err := http.NewRequest(method, tb.url+path, rd)
	require.NoError(t, err)
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: data, proto: resp.Proto}
}

// enqueue posts a job and returns it.
func (tb *testBundle) enqueue(t *testing.T, body string) api.Job {
	t.Helper()
	r := tb.req(t, "POST", "/jobs", body)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var j api.Job
	r.json(t, &j)
	return j
}

// takeStream is an open GET /jobs/take, its frames read by api.FrameReader
// in the framing the server answered with.
type takeStream struct {
	resp   *http.Response
	format api.StreamFormat
	frames chan []byte // messages in arrival order; empty: a heartbeat
	cancel context.CancelFunc
}

// take opens a take stream with the query (e.g. "prefetch=2&queue=a").
func (tb *testBundle) take(t *testing.T, query string, header ...string) *takeStream {
	t.Helper()
	return takeWith(t, tb, tb.h1, query, header...)
}

// takeWith is take over any client (tb.h2 for HTTP/2).
func takeWith(t *testing.T, tb *testBundle, c *http.Client, query string, header ...string) *takeStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, err := http.NewRequestWithContext(ctx, "GET", tb.url+"/jobs/take?"+query, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(r)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	format, ok := api.TakeFormat(resp.Header.Get("Content-Type"))
	require.True(t, ok, "Content-Type %q", resp.Header.Get("Content-Type"))
	ts := &takeStream{resp: resp, format: format, frames: make(chan []byte, 1024), cancel: cancel}
	go ts.read(api.NewFrameReader(resp.Body, format))
	t.Cleanup(ts.close)
	return ts
}

func (ts *takeStream) read(frames *api.FrameReader) {
	defer close(ts.frames)
	for {
		msg, err := frames.Next()
		if err != nil {
			return
		}
		ts.frames <- msg
	}
}

func (ts *takeStream) close() {
	ts.cancel()
	ts.resp.Body.Close()
}

// next returns the next job frame (skipping heartbeats), failing after d.
func (ts *takeStream) next(t *testing.T, d time.Duration) api.Job {
	t.Helper()
	j, _ := ts.nextFrame(t, d)
	return j
}

// nextFrame returns the next job frame and its message as it came.
func (ts *takeStream) nextFrame(t *testing.T, d time.Duration) (api.Job, []byte) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-ts.frames:
			require.True(t, ok, "take stream closed")
			if len(f) == 0 {
				continue
			}
			var j api.Job
			require.NoError(t, api.Unmarshal(ts.format.Message(), f, &j), "frame: %q", f)
			return j, f
		case <-deadline:
			t.Fatalf("no job frame within %s", d)
		}
	}
}

// none asserts that no job frame arrives within d.
func (ts *takeStream) none(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-ts.frames:
			if !ok {
				return
			}
			require.Empty(t, f, "unexpected job frame")
		case <-deadline:
			return
		}
	}
}

// formats are the wire encodings tests run in (eachFormat).
var formats = map[string]api.Format{"JSON": api.JSON, "MsgPack": api.MsgPack}

// eachFormat runs run as a parallel subtest in each wire encoding.
func eachFormat(t *testing.T, run func(t *testing.T, f api.Format)) {
	for name, f := range formats {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, f)
		})
	}
}
