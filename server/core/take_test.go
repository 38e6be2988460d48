package core

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// A leader that may have lost its lease hands out no more jobs, whatever
// the transport: Next refuses, and the jobs go back to ready when the
// stream closes.
func TestTaker_NextRefusesOnceTheLeaseIsLost(t *testing.T) {
	t.Parallel()
	var held atomic.Bool
	held.Store(true)
	s := startCoreWith(t, Options{LeaseHeld: held.Load})
	ctx := context.Background()
	job := NewJob{Type: "t", Queue: "q", Priority: 1, Payload: []byte("{}")}
	tk, err := s.Take(nil, 0)
	require.NoError(t, err)

	_, err = s.Enqueue(ctx, []NewJob{job})
	require.NoError(t, err)
	frames, err := tk.Next(ctx, nil)
	require.NoError(t, err)
	require.Len(t, frames, 1, "handed out while the lease is held")

	held.Store(false)
	second, err := s.Enqueue(ctx, []NewJob{job})
	require.NoError(t, err)
	frames, err = tk.Next(ctx, nil)
	require.ErrorIs(t, err, ErrLeaseLost)
	require.Empty(t, frames)

	tk.Close()
	j, err := s.Job(ctx, second[0].ID)
	require.NoError(t, err)
	require.Equal(t, store.Ready, j.Status, "back to ready with the stream's close")
}
