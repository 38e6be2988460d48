// Package memlimit keeps the Go heap near what the server holds. Left to
// GOGC alone, a server with a backlog of a million jobs lets its heap grow
// to twice its live data before collecting; a fixed soft limit
// (runtime/debug.SetMemoryLimit) below the live data would instead make
// the collector run without end. The limit here is the larger of a floor
// and a multiple of the live heap, adjusted as the live heap changes.
package memlimit

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Headroom is the limit as a multiple of the live heap, once the live heap
// needs more than the floor.
const Headroom = 1.5

// Limit returns the soft limit for a live heap under a floor.
func Limit(floor, live uint64) int64 {
	l := max(floor, uint64(float64(live)*Headroom))
	if l > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(l)
}

// Run sets the soft memory limit now and every interval until ctx ends,
// from the live heap the last collection measured. A floor of 0 leaves
// the runtime's limit alone.
func Run(ctx context.Context, floor uint64, interval time.Duration) {
	if floor == 0 {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := func() {
		metrics.Read(sample)
		var live uint64
		if sample[0].Value.Kind() == metrics.KindUint64 {
			live = sample[0].Value.Uint64()
		}
		debug.SetMemoryLimit(Limit(floor, live))
	}
	set()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			set()
		}
	}
}
