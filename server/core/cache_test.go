package core

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPayloadCache_BoundsBytesAndEvictsOldest(t *testing.T) {
	t.Parallel()
	c := newPayloadCache(100)
	for i := range 10 {
		c.put(fmt.Sprint(i), make([]byte, 18)) // 19 bytes with the ID
	}
	require.LessOrEqual(t, c.size, int64(100))
	_, ok := c.take("0")
	require.False(t, ok, "the oldest are evicted first")
	p, ok := c.take("9")
	require.True(t, ok)
	require.Len(t, p, 18)
	_, ok = c.take("9")
	require.False(t, ok, "a payload is taken once")
}

func TestPayloadCache_KeepsACopy(t *testing.T) {
	t.Parallel()
	c := newPayloadCache(1 << 20)
	body := []byte(`{"jobs":[{"a":1},{"b":2}]}`)
	c.put("x", body[9:16])
	p, _ := c.take("x")
	require.Equal(t, `{"a":1}`, string(p))
	require.Equal(t, len(p), cap(p), "not a slice of the request body")
}

func TestPayloadCache_OrderStaysSmall(t *testing.T) {
	t.Parallel()
	c := newPayloadCache(1 << 20)
	for i := range 100_000 {
		id := fmt.Sprint(i)
		c.put(id, []byte("{}"))
		c.take(id)
	}
	require.Less(t, len(c.order)-c.head, 5000, "taken IDs do not pile up")
}

func TestPayloadCache_Replace(t *testing.T) {
	t.Parallel()
	c := newPayloadCache(100)
	c.put("a", []byte("[1]"))
	p, ok := c.peek("a")
	require.True(t, ok)
	require.Equal(t, "[1]", string(p))
	c.replace("a", []byte("[1,2]"))
	p, _ = c.take("a")
	require.Equal(t, "[1,2]", string(p), "peek kept it; replace swapped it")
	require.Zero(t, c.size, "the old payload's bytes went with it")

	c.put("b", []byte("[1]"))
	c.replace("b", make([]byte, 200))
	_, ok = c.peek("b")
	require.False(t, ok, "a payload past the bound leaves no stale one behind")
}

func TestPayloadCache_ReplacedManyTimes(t *testing.T) {
	t.Parallel()
	c := newPayloadCache(1 << 20)
	for i := range 100_000 {
		c.replace(fmt.Sprint(i%8), []byte(fmt.Sprint(i)))
	}
	require.Less(t, len(c.order)-c.head, 5000, "replaced entries do not pile up")
	p, _ := c.peek("7")
	require.Equal(t, "99999", string(p))

	// The oldest payload goes first, where its latest entry puts it: a
	// replaced one counts as new.
	c = newPayloadCache(30)
	c.put("a", []byte("1234567"))        // 8 bytes with the ID
	c.put("b", []byte("1234567"))        // 16
	c.replace("a", []byte("1234567"))    // a is now newer than b
	c.put("c", []byte("12345678901234")) // 31: one must go
	_, okA := c.peek("a")
	_, okB := c.peek("b")
	require.True(t, okA)
	require.False(t, okB, "b was the oldest")
	require.LessOrEqual(t, c.size, int64(30))
}

// TestPayloadCache_FullCacheCompactsRarely: a cache at its bound evicts
// one payload per put; compacting its order must cost O(1) a put, not a
// pass over every live entry each thousand puts (it was a tenth of the
// server's CPU while draining a backlog).
func TestPayloadCache_FullCacheCompactsRarely(t *testing.T) {
	t.Parallel()
	const puts = 200_000
	c := newPayloadCache(50_000 * 10) // about 50,000 payloads of 4 bytes and a 6-byte ID
	for i := range puts {
		c.put(fmt.Sprintf("%06d", i), []byte("1234"))
	}
	require.Greater(t, len(c.items), 40_000, "the cache is full")
	require.Less(t, c.compactions, 4*puts, "entries examined by compaction")
}
