package memlimit

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		floor, live uint64
		want        int64
	}{
		{floor: 100, live: 10, want: 100},
		{floor: 100, live: 66, want: 100},
		{floor: 100, live: 100, want: 150},
		{floor: 1 << 30, live: 4 << 30, want: 6 << 30},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Limit(tt.floor, tt.live), "floor %d live %d", tt.floor, tt.live)
	}
}

func TestRun_FollowsEachCollectionAndStops(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	const floor = 1 << 40
	go func() { Run(ctx, floor); close(done) }()
	require.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == floor }, 5*time.Second, time.Millisecond)

	// Someone else sets the limit; the next collection puts it back.
	debug.SetMemoryLimit(1 << 50)
	require.Eventually(t, func() bool { runtime.GC(); return debug.SetMemoryLimit(-1) == floor }, 5*time.Second, time.Millisecond)
	cancel()
	<-done

	// Stopped: collections leave the limit alone.
	debug.SetMemoryLimit(1 << 50)
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, int64(1<<50), debug.SetMemoryLimit(-1))
}

// TestIdleRelease_OncePerBurst: the heap is given back at the first idle
// interval after work, once, however long the idleness lasts.
func TestIdleRelease_OncePerBurst(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	allocated := uint64(0)
	releases := 0
	r := idleRelease{allocated: func() uint64 { return allocated }, release: func() { releases++ }}
	steps := []struct {
		alloc uint64 // during the interval
		want  int    // releases so far after it
	}{
		{100 * mb, 0}, // a fill
		{50 * mb, 0},
		{1 * mb, 1}, // idle: released
		{0, 1},      // still idle: not again
		{3 * mb, 1}, // a trickle under the threshold is idle
		{40 * mb, 1},
		{0, 2}, // the next burst ended
	}
	for i, s := range steps {
		allocated += s.alloc
		r.tick()
		require.Equal(t, s.want, releases, "after interval %d", i)
	}
}
