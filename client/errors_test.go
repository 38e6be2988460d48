package client_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

func TestClient_ErrorTyping(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		_, err := tb.c.GetJob(ctx, "0000000000000000000000000")
		var e *client.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, http.StatusNotFound, e.Status)
		require.Equal(t, "job not found", e.Message)
		require.Equal(t, "job not found", err.Error())
		require.True(t, client.IsNotFound(err))
		require.False(t, client.IsConflict(err) || client.IsValidation(err) || client.IsUnreachable(err))

		_, err = tb.c.Enqueue(ctx, api.EnqueueRequest{Queue: api.Ptr("q")})
		require.True(t, client.IsValidation(err), "%v", err)
		require.Equal(t, http.StatusBadRequest, client.StatusOf(err))

		_, err = tb.c.Enqueue(ctx, job("q", "t", "", bind("missing", 1)))
		require.True(t, client.IsValidation(err), "%v", err)
		require.Equal(t, http.StatusUnprocessableEntity, client.StatusOf(err))
		require.Contains(t, err.Error(), "budget 'missing' does not exist")

		_, err = tb.c.PutBudget(ctx, "b", wif(1))
		require.NoError(t, err)
		_, err = tb.c.CreateBudget(ctx, "b", wif(1))
		require.True(t, client.IsConflict(err), "%v", err)
		require.False(t, client.IsNotFound(err))

		req := job("q", "t", "")
		req.UniqueKey, req.UniqueWhile = api.Ptr("k"), api.Ptr("sometimes")
		_, err = tb.c.Enqueue(ctx, req)
		require.True(t, client.IsValidation(err), "%v", err)
		require.Equal(t, http.StatusBadRequest, client.StatusOf(err))
	})
}

func TestClient_Unreachable(t *testing.T) {
	t.Parallel()
	url := freeURL(t)
	c, err := client.New(url, client.Options{Retries: -1})
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"Get":  func() error { _, err := c.Health(ctxT(t)); return err },
		"Post": func() error { _, err := c.Enqueue(ctxT(t), job("q", "t", "")); return err },
	} {
		err := call()
		require.True(t, client.IsUnreachable(err), "%s: %v", name, err)
		require.Contains(t, err.Error(), "cannot reach zizq server at "+url)
		require.True(t, errors.Is(err, syscall.ECONNREFUSED), "%s: wraps the net error: %v", name, err)
		var ne *net.OpError
		require.ErrorAs(t, err, &ne)
		require.Zero(t, client.StatusOf(err))
	}

	// The caller's cancellation is not "unreachable".
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Health(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, client.IsUnreachable(err))
}

func TestClient_Timeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hs.Close()
	defer close(release)
	c, err := client.New(hs.URL, client.Options{Timeout: 50 * time.Millisecond, Retries: -1})
	require.NoError(t, err)
	_, err = c.Health(context.Background())
	require.True(t, client.IsUnreachable(err), "%v", err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "no answer within 50ms")
}

func TestClient_Retries(t *testing.T) {
	t.Parallel()
	var gets, posts atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			if gets.Add(1) < 3 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":"storage unavailable: busy"}`))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"ok"}`))
			return
		}
		posts.Add(1)
		w.Header().Set("Content-Type", "application/msgpack")
		w.WriteHeader(http.StatusInternalServerError)
		body, _ := api.Marshal(api.MsgPack, api.Error{Error: "internal server error"})
		_, _ = w.Write(body)
	}))
	defer hs.Close()
	c, err := client.New(hs.URL, client.Options{Retries: 2})
	require.NoError(t, err)
	h, err := c.Health(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, "ok", h.Status)
	require.Equal(t, int32(3), gets.Load(), "a GET is tried again after a 5xx")

	require.Error(t, c.Reset(ctxT(t)))
	require.Equal(t, int32(1), posts.Load(), "a POST is never retried")
	err = c.Reset(ctxT(t))
	require.Equal(t, http.StatusInternalServerError, client.StatusOf(err))
	require.Equal(t, "internal server error", err.Error(), "a msgpack error body is read too")

	// Retries give up after the count.
	gets.Store(-10)
	_, err = c.Health(ctxT(t))
	require.Equal(t, http.StatusServiceUnavailable, client.StatusOf(err))
	require.Equal(t, "storage unavailable: busy", err.Error())
	require.Equal(t, int32(-7), gets.Load())
}

func TestClient_NonJSONError(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
		_, _ = w.Write([]byte("431 Request Header Fields Too Large"))
	}))
	defer hs.Close()
	c, err := client.New(hs.URL, client.Options{Retries: -1})
	require.NoError(t, err)
	_, err = c.Health(ctxT(t))
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, client.StatusOf(err), "Go's own plain-text answers are the server's")
	require.Equal(t, "server answered 431 Request Header Fields Too Large: 431 Request Header Fields Too Large", err.Error())
	require.False(t, client.IsNotZizq(err))
}

// TestClient_NotZizq points the client at what is not a zizq server: the
// error names the URL and what answered in one line, never the page.
func TestClient_NotZizq(t *testing.T) {
	t.Parallel()
	page := "<!DOCTYPE html>\n<html>\n<body>\n<h1>Welcome</h1>\n</body>\n</html>\n"
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		want        string
	}{
		{"WebPage", http.StatusOK, "text/html; charset=utf-8", ": not a zizq server (got 200 text/html)"},
		{"ProxyError", http.StatusBadGateway, "text/html", ": not a zizq server (got 502 text/html)"},
		{"OtherFormat", http.StatusOK, "text/plain", ": not a zizq server (got 200 text/plain)"},
		{"NoContentType", http.StatusOK, "", ": not a zizq server (got 200 no content type)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = []string{tc.contentType}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(page))
			}))
			defer hs.Close()
			c, err := client.New(hs.URL, client.Options{Retries: -1})
			require.NoError(t, err)
			_, err = c.Health(ctxT(t))
			require.True(t, client.IsNotZizq(err), "%v", err)
			require.Equal(t, hs.URL+tc.want, err.Error())
			require.False(t, client.IsUnreachable(err))
			require.Zero(t, client.StatusOf(err), "not a status of the Zizq API")
			var nz *client.NotZizqError
			require.ErrorAs(t, err, &nz)
			require.Equal(t, tc.status, nz.Status)
		})
	}
}

// TestClient_PlainHTTPToTLS asks a TLS port with http://: the error says
// to use https://.
func TestClient_PlainHTTPToTLS(t *testing.T) {
	t.Parallel()
	hs := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer hs.Close()
	addr := hs.Listener.Addr().String()
	c, err := client.New("http://"+addr, client.Options{Retries: -1})
	require.NoError(t, err)
	for name, call := range map[string]func() error{
		"Get":    func() error { _, err := c.Health(ctxT(t)); return err },
		"Post":   func() error { _, err := c.Enqueue(ctxT(t), job("q", "t", "")); return err },
		"Take":   func() error { _, err := c.Take(ctxT(t), client.TakeOptions{}); return err },
		"Backup": func() error { _, err := c.Backup(ctxT(t), io.Discard); return err },
	} {
		err := call()
		require.True(t, client.IsNotZizq(err), "%s: %v", name, err)
		require.Equal(t, "http://"+addr+" is a TLS port: use https://"+addr, err.Error(), name)
	}
}

func TestNew_BadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:7890", "ftp://x", "http://", "http://h:1/?a=b", "::"} {
		_, err := client.New(u, client.Options{})
		require.Error(t, err, u)
	}
	// A URL without a scheme gets the same hint, whether it parses or not.
	for _, u := range []string{"localhost:7890", "127.0.0.1:7890", "zizq.internal"} {
		_, err := client.New(u, client.Options{})
		require.EqualError(t, err, `invalid server URL "`+u+`": it needs a scheme: try http://`+u)
	}
	c, err := client.New("http://127.0.0.1:7890/", client.Options{})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:7890", c.URL())
	require.Equal(t, api.JSON, c.Format())
}
