package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server/api"
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

		// The unique key is refused until uniqueness is built (403).
		req := job("q", "t", "")
		req.UniqueKey = api.Ptr("k")
		_, err = tb.c.Enqueue(ctx, req)
		require.Equal(t, http.StatusForbidden, client.StatusOf(err), "%v", err)
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
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	}))
	defer hs.Close()
	c, err := client.New(hs.URL, client.Options{Retries: -1})
	require.NoError(t, err)
	_, err = c.Health(ctxT(t))
	require.Equal(t, http.StatusBadGateway, client.StatusOf(err))
	require.Equal(t, "server answered 502 Bad Gateway: <html>bad gateway</html>", err.Error())
}

func TestNew_BadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:7890", "ftp://x", "http://", "http://h:1/?a=b", "::"} {
		_, err := client.New(u, client.Options{})
		require.Error(t, err, u)
	}
	c, err := client.New("http://127.0.0.1:7890/", client.Options{})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:7890", c.URL())
	require.Equal(t, api.JSON, c.Format())
}
