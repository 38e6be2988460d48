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
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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

// Run sets the soft memory limit now and again after every collection,
// from the live heap that collection measured, until ctx ends. Following
// each collection rather than a clock matters while the heap grows fast (a
// start-up loading ten million jobs): a limit a few seconds stale sits
// below the live heap, and the collector then runs without pause. A floor
// of 0 leaves the runtime's limit alone.
func Run(ctx context.Context, floor uint64) {
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
	stop := afterEachCollection(set)
	<-ctx.Done()
	stop()
}

// afterEachCollection calls fn after each garbage collection until stop
// is called; once stop returns, fn is not called again. A cleanup runs
// once the collector has found its object unreachable, and each one arms
// the next on a fresh object.
func afterEachCollection(fn func()) (stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		arm     func()
	)
	arm = func() {
		// A pointer keeps the object out of the tiny allocator, whose
		// blocks are freed together and late.
		type sentinel struct{ _ *byte }
		runtime.AddCleanup(new(sentinel), func(struct{}) {
			mu.Lock()
			defer mu.Unlock()
			if !stopped {
				fn()
				arm()
			}
		}, struct{}{})
	}
	arm()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}

// IdleAllocBytes is what a server may allocate in one IdleInterval and
// still count as idle.
const (
	IdleAllocBytes = 4 << 20
	IdleInterval   = time.Second
)

// ReleaseWhenIdle gives the heap's garbage back to the operating system
// once after each burst of work, at the first interval in which the
// process allocated less than IdleAllocBytes, until ctx ends. After a
// burst (a fill of a million jobs) the heap holds up to Headroom times
// the live data, and the runtime returns the freed pages only slowly: an
// idle server would sit on that memory for minutes. One collection then
// costs the idle process a moment of CPU.
func ReleaseWhenIdle(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	idle := idleRelease{allocated: allocatedBytes, release: debug.FreeOSMemory}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			idle.tick()
		}
	}
}

// idleRelease decides, one interval at a time, when to release.
type idleRelease struct {
	allocated func() uint64 // bytes allocated since the start
	release   func()
	last      uint64
	released  bool // nothing was allocated since the last release
}

func (r *idleRelease) tick() {
	now := r.allocated()
	busy := now-r.last >= IdleAllocBytes
	r.last = now
	switch {
	case busy:
		r.released = false
	case !r.released:
		r.release()
		r.released = true
		r.last = r.allocated() // the collection's own allocations are not work
	}
}

func allocatedBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
