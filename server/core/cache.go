package core

import "sync"

// payloadCache keeps the payloads of jobs enqueued moments ago, bounded in
// bytes, so that their dispatch does not read them back from the store.
// Each payload is taken once, at dispatch; when the cache is over its
// bound the oldest go first (their jobs wait in a backlog and are read
// from the store in batches when their turn comes).
type payloadCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	items map[string][]byte
	order []string // insertion order; taken or evicted IDs are skipped
	head  int
}

func newPayloadCache(max int64) *payloadCache {
	return &payloadCache{max: max, items: map[string][]byte{}}
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
	c.items[id] = payload
	c.order = append(c.order, id)
	c.size += int64(len(payload) + len(id))
	for c.size > c.max && c.head < len(c.order) {
		old := c.order[c.head]
		c.order[c.head] = ""
		c.head++
		if p, ok := c.items[old]; ok {
			delete(c.items, old)
			c.size -= int64(len(p) + len(old))
		}
	}
	c.compact()
}

// take returns and forgets a payload.
func (c *payloadCache) take(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.items[id]
	if ok {
		delete(c.items, id)
		c.size -= int64(len(p) + len(id))
	}
	return p, ok
}

// peek returns a payload and keeps it (for the event stream's detail
// mode, which must not take it from the dispatch).
func (c *payloadCache) peek(id string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.items[id]
	return p, ok
}

// compact drops the order's skipped IDs once they outnumber the live ones.
func (c *payloadCache) compact() {
	if c.head < 1024 && len(c.order)-c.head < 2*len(c.items)+1024 {
		return
	}
	live := make([]string, 0, len(c.items))
	for _, id := range c.order[c.head:] {
		if _, ok := c.items[id]; ok {
			live = append(live, id)
		}
	}
	c.order, c.head = live, 0
}
