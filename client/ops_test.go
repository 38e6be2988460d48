package client_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/store/archive"
)

func TestClient_Operations(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		h, err := tb.c.Ready(ctx)
		require.NoError(t, err)
		require.Equal(t, "ready", h.Status)

		// Retry a dead job.
		j, err := tb.c.Enqueue(ctx, job("q", "t", `{"a":1}`))
		require.NoError(t, err)
		s, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Next()
		require.NoError(t, err)
		dead, err := tb.c.Fail(ctx, j.ID, api.FailureRequest{Message: api.Ptr("no"), Kill: api.Ptr(true)})
		require.NoError(t, err)
		require.Equal(t, api.StatusDead, dead.Status)
		again, err := tb.c.RetryJob(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, api.StatusReady, again.Status)
		require.Equal(t, uint32(1), again.Attempts)
		_, err = tb.c.RetryJob(ctx, j.ID)
		require.True(t, client.IsValidation(err), "not dead: %v", err)
		_, err = tb.c.RetryJob(ctx, "0000000000000000000000000")
		require.True(t, client.IsNotFound(err), "%v", err)

		// Back up, on the admin port: a whole archive holding the database.
		var buf bytes.Buffer
		_, err = tb.c.Backup(ctx, &buf)
		require.True(t, client.IsNotFound(err), "not on the API port: %v", err)
		n, err := tb.admin.Backup(ctx, &buf)
		require.NoError(t, err)
		require.Equal(t, int64(buf.Len()), n)
		size, err := archive.Check(&buf)
		require.NoError(t, err)
		require.Positive(t, size)

		require.NoError(t, tb.admin.Compact(ctx))
		require.True(t, client.IsNotFound(tb.c.Compact(ctx)), "not on the API port")
	})
}
