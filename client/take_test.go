package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server"
)

func TestClient_Take(t *testing.T) {
	t.Parallel()
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			// Heartbeats every 10ms: the stream must skip them.
			tb := setup(t, f.f, func(o *server.Options) { o.HTTP.HeartbeatInterval = 10 * time.Millisecond })
			ctx := ctxT(t)
			a, err := tb.c.Enqueue(ctx, job("q", "t", `{"k":"v"}`))
			require.NoError(t, err)

			s, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}, Prefetch: 2, WorkerID: "w1"})
			require.NoError(t, err)
			got, err := s.Next()
			require.NoError(t, err)
			require.Equal(t, a.ID, got.ID)
			require.Equal(t, api.StatusInFlight, got.Status)
			require.Equal(t, `{"k":"v"}`, string(got.Payload))

			time.Sleep(50 * time.Millisecond) // some heartbeats
			b, err := tb.c.Enqueue(ctx, job("q", "t", `[1]`))
			require.NoError(t, err)
			got, err = s.Next()
			require.NoError(t, err)
			require.Equal(t, b.ID, got.ID)

			require.NoError(t, tb.c.Ack(ctx, a.ID))
			nf, err := tb.c.AckBulk(ctx, []string{b.ID, "0000000000000000000000000"})
			require.NoError(t, err)
			require.Equal(t, []string{"0000000000000000000000000"}, nf)
			nf, err = tb.c.AckBulk(ctx, []string{b.ID})
			require.NoError(t, err, "b was completed by the first bulk ack")
			require.Equal(t, []string{b.ID}, nf)
			_, err = tb.c.AckBulk(ctx, nil)
			require.True(t, client.IsValidation(err), "%v", err)
			err = tb.c.Ack(ctx, a.ID)
			require.True(t, client.IsNotFound(err), "%v", err)
			require.NoError(t, s.Close())
			require.NoError(t, s.Close(), "Close is idempotent")

			// The iterator form, ended by cancelling the context: the job
			// it held goes back to ready.
			c2, err := tb.c.Enqueue(ctx, job("q", "t", ""))
			require.NoError(t, err)
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			s2, err := tb.c.Take(sctx, client.TakeOptions{})
			require.NoError(t, err)
			var seen []string
			for j, err := range s2.All() {
				if err != nil {
					require.True(t, errors.Is(err, context.Canceled), "%v", err)
					break
				}
				seen = append(seen, j.ID)
				cancel()
			}
			require.Equal(t, []string{c2.ID}, seen)
			require.Eventually(t, func() bool {
				j, err := tb.c.GetJob(ctx, c2.ID)
				return err == nil && j.Status == api.StatusReady
			}, 5*time.Second, 10*time.Millisecond)

			_, err = tb.c.Take(ctx, client.TakeOptions{Prefetch: -5})
			require.Error(t, err)
			_, err = tb.c.Take(ctx, client.TakeOptions{Queues: []string{"a*"}})
			if err != nil { // the server may refuse reserved characters
				require.True(t, client.IsValidation(err), "%v", err)
			}
		})
	}
}

func TestClient_TakeLimit(t *testing.T) {
	t.Parallel()
	tb := setup(t, api.JSON, func(o *server.Options) { o.HTTP.MaxTakeConnections = 1 })
	ctx := ctxT(t)
	s, err := tb.c.Take(ctx, client.TakeOptions{})
	require.NoError(t, err)
	defer s.Close()
	_, err = tb.c.Take(ctx, client.TakeOptions{})
	require.Equal(t, 503, client.StatusOf(err), "%v", err)
	require.Contains(t, err.Error(), "too many take connections")
}

func TestClient_TakeUnreachable(t *testing.T) {
	t.Parallel()
	url := freeURL(t)
	c, err := client.New(url, client.Options{})
	require.NoError(t, err)
	_, err = c.Take(ctxT(t), client.TakeOptions{})
	require.True(t, client.IsUnreachable(err), "%v", err)
	require.Contains(t, err.Error(), url)
}

// TestStream_NextCutMidFrame: a stream that ends inside a frame is an
// error, never the clean end (io.EOF) of a server shutting down; a
// MessagePack frame cut right after its length prefix counts too.
func TestStream_NextCutMidFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    api.Format
		body string
	}{
		{"NDJSONLine", api.JSON, `{"id":"x"`},
		{"MsgPackAfterLength", api.MsgPack, "\x00\x00\x00\x05"},
		{"MsgPackInBody", api.MsgPack, "\x00\x00\x00\x05\x81"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", api.StreamContentType(tt.f.Stream()))
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			c, err := client.New(srv.URL, client.Options{Format: tt.f})
			require.NoError(t, err)
			s, err := c.Take(ctxT(t), client.TakeOptions{})
			require.NoError(t, err)
			defer s.Close()
			_, err = s.Next()
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.NotErrorIs(t, err, io.EOF)
		})
	}
}
