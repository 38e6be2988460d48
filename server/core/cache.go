package core

import "sync"

// payloadCache keeps the payloads of jobs enqueued (or folded into)
// moments ago, bounded in bytes, so that their dispatch does not read them
// back from the store. Each payload is taken once, at dispatch; when the
// cache is over its bound the oldest go first (their jobs wait in a backlog
// and are read from the store in batches when their turn comes).
type payloadCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	items map[string]cachedPayload
	order []orderEntry // insertion order; entries of payloads since taken, evicted or replaced are skipped
	head  int
	seq   uint64
	// compactions counts the entries compact has examined (its cost).
	compactions int
}

type cachedPayload struct {
	payload []byte
	seq     uint64 // its entry in order
}

type orderEntry struct {
	id  string
	seq uint64
}

func newPayloadCache(max int64) *payloadCache {
	return &payloadCache{max: max, items: map[string]cachedPayload{}}
}

// live reports whether an order entry is its payload's current one.
func (c *payloadCache) live(e orderEntry) bool {
	p, ok := c.items[e.id]
	return ok && p.seq == e.seq
}

// put keeps a payload, evicting the oldest past the bound.
func (c *payloadCache) put(id string, payload []byte) {
	if c.max <= 0 || int64(len(payload)) > c.max {
		return
	}
	// A copy: the payload may be a slice of the request's whole body, which
	// would stay alive with it.
	payload = append(make([]byte, 0, len(payload)), payload...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
	c.seq++
	c.items[id] = cachedPayload{payload: payload, seq: c.seq}
	c.order = append(c.order, orderEntry{id: id, seq: c.seq})
	c.size += int64(len(payload) + len(id))
	for c.size > c.max && c.head < len(c.order) {
		old := c.order[c.head]
		c.order[c.head] = orderEntry{}
		c.head++
		if c.live(old) {
			c.dropLocked(old.id)
		}
	}
	c.compact()
}

// peek returns a payload and keeps it (a fold reads the pending job's;
// the event stream's detail mode must not take it from the dispatch).
func (c *payloadCache) peek(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.items[id]
	return p.payload, ok
}

// replace puts a job's new payload (a fold's) in place of its old one;
// one past the bound only removes the old.
func (c *payloadCache) replace(id string, payload []byte) {
	c.take(id)
	c.put(id, payload)
}

// take returns and forgets a payload.
func (c *payloadCache) take(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.items[id]
	c.dropLocked(id)
	return p.payload, ok
}

func (c *payloadCache) dropLocked(id string) {
	if p, ok := c.items[id]; ok {
		delete(c.items, id)
		c.size -= int64(len(p.payload) + len(id))
	}
}

// compact drops the order's consumed prefix once it is half the order,
// and its skipped entries once they outnumber the live ones. Both bounds
// grow with the order, so a full cache that evicts one entry per put pays
// O(1) a put for this, not a pass over every live entry each 1,024 puts.
func (c *payloadCache) compact() {
	consumed := c.head >= 1024 && c.head >= len(c.order)/2
	skipped := len(c.order)-c.head >= 2*len(c.items)+1024
	if !consumed && !skipped {
		return
	}
	c.compactions += len(c.order) - c.head
	live := make([]orderEntry, 0, len(c.items))
	for _, e := range c.order[c.head:] {
		if c.live(e) {
			live = append(live, e)
		}
	}
	c.order, c.head = live, 0
}
