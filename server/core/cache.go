package core

import (
	"iter"
	"sync"
	"time"

	"github.com/zizq/zizq/server/jobid"
)

// payloadCache keeps the payloads of jobs enqueued (or folded into)
// moments ago, bounded in bytes, so that their dispatch does not read them
// back from the store. Each payload is taken once, at dispatch.
//
// The policy follows from that: in a backlog dispatched oldest first, the
// payloads worth keeping are the oldest, the ones dispatched next, not the
// newest, which would be evicted before their turn came. So a full cache
// admits no more (the jobs behind a deep backlog are read from the store
// in batches when their turn comes), and room made by dispatch goes to the
// enqueues that follow. Two things still evict:
//   - a payload kept longer than staleAfter, when room is wanted: its job
//     is parked, scheduled or in a queue nobody serves, and would
//     otherwise hold its room from the jobs that flow;
//   - a lower bound (setBound, as the engine's jobs take the heap): the
//     newest go first, the ones a backlog dispatches last.
//
// The bound counts what an entry really holds on the heap: its payload's
// allocation and entryOverhead for its map slot and order entry.
type payloadCache struct {
	mu    sync.Mutex
	max   int64 // the bound given; bound is at most this
	bound int64
	size  int64
	items map[jobid.ID]cachedPayload
	// order is admission order, oldest first, from head on; entries of
	// payloads since taken or evicted (or taken and put again, whose
	// place is their new entry) are skipped.
	order []jobid.ID
	head  int
	// peak is the most entries since the map was made: a map keeps the
	// room of its most entries, so a cache shrunk far below it is copied.
	peak int
	now  func() time.Time
	// compactions counts the entries compact has examined (its cost).
	compactions int
}

type cachedPayload struct {
	payload []byte
	at      int // its entry's index in order
}

// entryOverhead is what an entry holds beside its payload: a map slot of
// 48 bytes (ID, slice header, place in order) at the map's usual load,
// and its ID in order with that slice's spare room.
// BenchmarkPayloadCache_HeapPerEntry measures it.
const entryOverhead = 96

// staleAfter is how long a payload may hold its room while newer payloads
// are refused: past it, its job is unlikely to be dispatched soon.
const staleAfter = time.Minute

func newPayloadCache(max int64, now func() time.Time) *payloadCache {
	return &payloadCache{max: max, bound: max, items: map[jobid.ID]cachedPayload{}, now: now}
}

// cost is what a payload's entry counts against the bound.
func cost(payload []byte) int64 { return int64(cap(payload)) + entryOverhead }

// setBound lowers the bound to at most bound (never above the one given
// at construction), evicting the newest payloads past it.
func (c *payloadCache) setBound(bound int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bound = max(min(bound, c.max), 0)
	for c.size > c.bound && c.head < len(c.order) {
		last := len(c.order) - 1
		id := c.order[last]
		if c.live(id, last) {
			c.dropLocked(id)
		}
		c.order = c.order[:last]
	}
	if len(c.items) < c.peak/4 {
		c.rebuild()
	}
}

// put keeps a payload if there is room for it, making room only of stale
// payloads. A job's payload already kept (a fold's new one) keeps its
// place if it fits and is dropped if not.
func (c *payloadCache) put(id string, payload []byte) {
	c.putAll(func(yield func(string, []byte) bool) { yield(id, payload) })
}

// putAll is put for each of payloads, under one lock: a bulk enqueue puts
// a thousand, each of which would otherwise take the lock twice.
func (c *payloadCache) putAll(payloads iter.Seq2[string, []byte]) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, payload := range payloads {
		if key, ok := jobid.Parse(id); ok {
			c.putLocked(key, payload)
		}
	}
}

func (c *payloadCache) putLocked(key jobid.ID, payload []byte) {
	old, kept := c.items[key]
	if !kept && !c.mayFit(len(payload)) {
		return
	}
	// A copy (the payload may be a slice of the request's whole body,
	// which would stay alive with it) whose capacity is its allocation.
	payload = append([]byte(nil), payload...)
	if kept {
		if c.size-cost(old.payload)+cost(payload) > c.bound {
			c.dropLocked(key)
			return
		}
		c.size += cost(payload) - cost(old.payload)
		c.items[key] = cachedPayload{payload: payload, at: old.at}
		return
	}
	c.evictStale(cost(payload))
	if c.size+cost(payload) > c.bound {
		return
	}
	c.items[key] = cachedPayload{payload: payload, at: len(c.order)}
	c.order = append(c.order, key)
	c.size += cost(payload)
	c.peak = max(c.peak, len(c.items))
	c.compact()
}

// mayFit reports whether a new payload of n bytes may be kept, before it
// is copied: behind a deep backlog most are not, and their copies would
// only be garbage.
func (c *payloadCache) mayFit(n int) bool {
	c.evictStale(int64(n) + entryOverhead)
	return c.size+int64(n)+entryOverhead <= c.bound
}

// evictStale drops the oldest payloads while they are stale and want is
// more than the room left.
func (c *payloadCache) evictStale(want int64) {
	cutoff := c.now().Add(-staleAfter).UnixMilli()
	for c.size+want > c.bound && c.head < len(c.order) {
		old := c.order[c.head]
		live := c.live(old, c.head)
		if live && old.Millis() > cutoff {
			return
		}
		if live {
			c.dropLocked(old)
		}
		c.order[c.head] = jobid.ID{}
		c.head++
	}
}

// peek returns a payload and keeps it (a fold reads the pending job's;
// the event stream's detail mode must not take it from the dispatch).
func (c *payloadCache) peek(id string) ([]byte, bool) {
	key, ok := jobid.Parse(id)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.items[key]
	return p.payload, ok
}

// replace puts a job's new payload (a fold's) in place of its old one;
// one that does not fit only removes the old.
func (c *payloadCache) replace(id string, payload []byte) { c.put(id, payload) }

// take returns and forgets a payload.
func (c *payloadCache) take(id string) ([]byte, bool) {
	key, ok := jobid.Parse(id)
	if !ok {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.items[key]
	c.dropLocked(key)
	return p.payload, ok
}

// live reports whether order[i] is its payload's entry.
func (c *payloadCache) live(id jobid.ID, i int) bool {
	p, ok := c.items[id]
	return ok && p.at == i
}

func (c *payloadCache) dropLocked(id jobid.ID) {
	if p, ok := c.items[id]; ok {
		delete(c.items, id)
		c.size -= cost(p.payload)
	}
}

// compact drops the order's consumed prefix once it is half the order,
// and its skipped entries once they outnumber the live ones. Both bounds
// grow with the order, so a cache that takes one payload per put pays
// O(1) a put for this, not a pass over every live entry each 1,024 puts.
func (c *payloadCache) compact() {
	consumed := c.head >= 1024 && c.head >= len(c.order)/2
	skipped := len(c.order)-c.head >= 2*len(c.items)+1024
	if !consumed && !skipped {
		return
	}
	c.compactions += len(c.order) - c.head
	c.order, c.head = c.liveOrder(), 0
}

// rebuild copies the live entries into a map and order of their size,
// giving back the room of the ones dropped.
func (c *payloadCache) rebuild() {
	order := c.liveOrder()
	items := make(map[jobid.ID]cachedPayload, len(order))
	for i, id := range order {
		p := c.items[id]
		p.at = i
		items[id] = p
	}
	c.items, c.order, c.head, c.peak = items, order, 0, len(items)
}

// liveOrder returns the live entries of order, renumbering their places.
func (c *payloadCache) liveOrder() []jobid.ID {
	live := make([]jobid.ID, 0, len(c.items))
	for i, id := range c.order[c.head:] {
		if p := c.items[id]; c.live(id, c.head+i) {
			p.at = len(live)
			c.items[id] = p
			live = append(live, id)
		}
	}
	return live
}
