package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/server/servertest"
)

// TestAcker_KeepsResultUntilJobComesBack: the stream that held a job
// closed while it ran, so the server put it back (ready): its success is
// answered 404 and kept, not reported delivered; when the job comes back
// on a new stream, that is the same job (not a new attempt), and the kept
// result completes it.
func TestAcker_KeepsResultUntilJobComesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl, err := client.New(servertest.Start(t).URL, client.Options{})
	require.NoError(t, err)
	_, err = cl.Enqueue(ctx, api.EnqueueRequest{Queue: api.Ptr("q"), Type: api.Ptr("t"), Payload: api.Payload("{}")})
	require.NoError(t, err)
	first, err := cl.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
	require.NoError(t, err)
	job, err := first.Next()
	require.NoError(t, err)
	require.NoError(t, first.Close())
	require.Eventually(t, func() bool {
		j, err := cl.GetJob(ctx, job.ID)
		return err == nil && j.Status == api.StatusReady
	}, 10*time.Second, 10*time.Millisecond)

	var mu sync.Mutex
	var notes []string
	a := newAcker(cl, func(s string) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, s)
	})
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.submit(actx, refOf(&job), nil, nil)
	require.Eventually(t, func() bool { return a.busy() == 0 }, 10*time.Second, 10*time.Millisecond, "kept, waiting")
	require.Len(t, a.undelivered(), 1)

	newer := refOf(&job)
	newer.attempts++
	require.False(t, a.redeliver(newer), "a later attempt of the job is a new run")

	second, err := cl.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
	require.NoError(t, err)
	defer second.Close()
	again, err := second.Next()
	require.NoError(t, err)
	require.True(t, a.redeliver(refOf(&again)))
	require.Eventually(t, func() bool { return len(a.undelivered()) == 0 }, 10*time.Second, 10*time.Millisecond)
	_, err = cl.GetJob(ctx, job.ID)
	require.True(t, client.IsNotFound(err), "completed (and deleted: no retention)")
	cancel()
	a.wait()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, notes, 2)
	require.Contains(t, notes[0], "the server no longer holds it in flight")
	require.Contains(t, notes[1], "came back to this worker")
}
