package core

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/jobid"
)

// cacheBundle is a cache on a fake clock, with job IDs from that clock.
type cacheBundle struct {
	clk *clock.Fake
	ids *jobid.Generator
	c   *payloadCache
}

func setupCache(bound int64) cacheBundle {
	clk := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	return cacheBundle{clk: clk, ids: jobid.New(clk.Now), c: newPayloadCache(bound, clk.Now)}
}

// putNew puts the payloads of n new jobs (payloadOf their index) and
// returns their IDs, in the order they were put.
func (b cacheBundle) putNew(n int) []string {
	ids := b.newIDs(n)
	for i, id := range ids {
		b.c.put(id, payloadOf(i))
	}
	return ids
}

// newIDs returns n job IDs, in the order they were made.
func (b cacheBundle) newIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = b.ids.Next()
	}
	return ids
}

// payloadOf is a payload whose entry costs entryOverhead+16 bytes.
func payloadOf(n int) []byte {
	return []byte{byte(n), byte(n >> 8), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
}

const entry16 = entryOverhead + 16

func TestPayloadCache_FullKeepsTheOldest(t *testing.T) {
	t.Parallel()
	b := setupCache(5 * entry16)
	ids := b.putNew(10)
	require.Equal(t, int64(5*entry16), b.c.size, "the bound counts payloads and their entries")
	for i, id := range ids {
		p, ok := b.c.take(id)
		require.Equal(t, i < 5, ok, "job %d: a full cache admits no more, the first enqueued are dispatched first", i)
		if ok {
			require.Equal(t, payloadOf(i), p)
		}
	}
	_, ok := b.c.take(ids[0])
	require.False(t, ok, "a payload is taken once")
	require.Zero(t, b.c.size)
}

// TestPayloadCache_BacklogGetsHits: a backlog deeper than the cache,
// dispatched oldest first while as many jobs are enqueued as dispatched.
// Keeping the newest payloads, as the cache once did, evicts each before
// its turn and hits none; keeping the admitted ones until their dispatch
// hits about capacity/backlog of them.
func TestPayloadCache_BacklogGetsHits(t *testing.T) {
	t.Parallel()
	const capacity, backlog, steps = 100, 1000, 20_000
	b := setupCache(capacity * entry16)
	queue := b.newIDs(backlog)
	for i, id := range queue {
		b.c.put(id, payloadOf(i))
	}
	hits := 0
	for i := range steps {
		id := b.ids.Next()
		b.c.put(id, payloadOf(i))
		queue = append(queue, id)
		if _, ok := b.c.take(queue[0]); ok {
			hits++
		}
		queue = queue[1:]
		b.clk.Advance(time.Millisecond) // 20 s in all: nothing goes stale
	}
	require.InDelta(t, float64(steps*capacity/backlog), float64(hits), float64(steps*capacity/backlog)/5)
}

func TestPayloadCache_StalePayloadsMakeRoom(t *testing.T) {
	t.Parallel()
	b := setupCache(2 * entry16)
	parked := b.newIDs(2)
	for i, id := range parked {
		b.c.put(id, payloadOf(i))
	}
	b.clk.Advance(staleAfter - time.Millisecond)
	flowing := b.newIDs(1)[0]
	b.c.put(flowing, payloadOf(9))
	_, ok := b.c.peek(flowing)
	require.False(t, ok, "payloads kept less than staleAfter keep their room")

	b.clk.Advance(2 * time.Millisecond)
	b.c.put(flowing, payloadOf(9))
	_, ok = b.c.peek(flowing)
	require.True(t, ok, "a stale payload made room")
	_, ok = b.c.peek(parked[0])
	require.False(t, ok, "the oldest went")
	_, ok = b.c.peek(parked[1])
	require.True(t, ok, "only as many as the new one needs")
}

func TestPayloadCache_LowerBoundDropsTheNewest(t *testing.T) {
	t.Parallel()
	b := setupCache(10 * entry16)
	ids := b.putNew(10)
	b.c.setBound(4*entry16 + 1)
	require.Equal(t, int64(4*entry16), b.c.size)
	for i, id := range ids {
		_, ok := b.c.peek(id)
		require.Equal(t, i < 4, ok, "job %d", i)
	}
	b.c.setBound(-5)
	require.Zero(t, b.c.size, "a negative bound is none")
	b.c.setBound(1 << 40)
	require.Equal(t, int64(10*entry16), b.c.bound, "never above the bound given")
}

// TestPayloadCache_ShrunkGivesBackItsMap: a map keeps the room of its most
// entries; a cache whose bound falls as a backlog grows must not keep a
// map sized for the many payloads it held before (9 MiB at a million
// jobs).
func TestPayloadCache_ShrunkGivesBackItsMap(t *testing.T) {
	t.Parallel()
	b := setupCache(10_000 * entry16)
	ids := b.putNew(10_000)
	b.c.setBound(100 * entry16)
	require.Len(t, b.c.items, 100)
	require.Equal(t, 100, b.c.peak, "the map was made again at its size")
	require.Len(t, b.c.order, 100)
	for i, id := range ids[:100] {
		p, ok := b.c.take(id)
		require.True(t, ok)
		require.Equal(t, payloadOf(i), p)
	}
}

func TestPayloadCache_KeepsACopy(t *testing.T) {
	t.Parallel()
	b := setupCache(1 << 20)
	id := b.newIDs(1)[0]
	body := []byte(`{"jobs":[{"a":1},{"b":2}]}`)
	b.c.put(id, body[9:16])
	copy(body[9:16], "xxxxxxx")
	p, _ := b.c.take(id)
	require.Equal(t, `{"a":1}`, string(p), "not a slice of the request body")
}

func TestPayloadCache_Replace(t *testing.T) {
	t.Parallel()
	b := setupCache(3 * entry16)
	ids := b.putNew(3)
	b.c.replace(ids[1], []byte("[1,2]"))
	p, ok := b.c.peek(ids[1])
	require.True(t, ok, "a full cache takes a fold's payload in its job's place")
	require.Equal(t, "[1,2]", string(p))
	b.c.setBound(2 * entry16)
	_, ok = b.c.peek(ids[1])
	require.True(t, ok, "the fold kept its job's place, not the newest")

	b.c.replace(ids[0], make([]byte, 3*entry16))
	_, ok = b.c.peek(ids[0])
	require.False(t, ok, "a payload past the bound leaves no stale one behind")
	require.Equal(t, cost(p), b.c.size)
}

func TestPayloadCache_OrderStaysSmall(t *testing.T) {
	t.Parallel()
	b := setupCache(1 << 20)
	for _, id := range b.newIDs(100_000) {
		b.c.put(id, []byte("{}"))
		b.c.take(id)
	}
	require.Less(t, len(b.c.order)-b.c.head, 5000, "taken IDs do not pile up")
}

// TestPayloadCache_FullCacheCompactsRarely: a full cache whose oldest
// payload is taken at each put; compacting its order must cost O(1) a
// put, not a pass over every live entry each thousand puts (it was a tenth
// of the server's CPU while draining a backlog).
func TestPayloadCache_FullCacheCompactsRarely(t *testing.T) {
	t.Parallel()
	const puts = 200_000
	b := setupCache(50_000 * entry16)
	ids := b.newIDs(puts)
	for i, id := range ids {
		b.c.put(id, payloadOf(i))
		if i >= 50_000 {
			b.c.take(ids[i-50_000])
		}
	}
	require.Greater(t, len(b.c.items), 40_000, "the cache is full")
	require.Less(t, b.c.compactions, 4*puts, "entries examined by compaction")
}

// cacheModel is the cache's policy on a plain list, oldest admitted first.
type cacheModel struct {
	bound   int64
	entries []modelEntry
}

type modelEntry struct {
	id      string
	payload []byte
	at      time.Time // when the ID was made
}

func (m *cacheModel) size() int64 {
	var n int64
	for _, e := range m.entries {
		n += int64(len(e.payload)) + entryOverhead
	}
	return n
}

func (m *cacheModel) find(id string) int {
	return slices.IndexFunc(m.entries, func(e modelEntry) bool { return e.id == id })
}

func (m *cacheModel) put(id string, payload []byte, made, now time.Time) {
	cost := int64(len(payload)) + entryOverhead
	if i := m.find(id); i >= 0 {
		if m.size()-int64(len(m.entries[i].payload))-entryOverhead+cost > m.bound {
			m.entries = slices.Delete(m.entries, i, i+1)
		} else {
			m.entries[i].payload = payload
		}
		return
	}
	for m.size()+cost > m.bound && len(m.entries) > 0 && now.Sub(m.entries[0].at) >= staleAfter {
		m.entries = m.entries[1:]
	}
	if m.size()+cost <= m.bound {
		m.entries = append(m.entries, modelEntry{id, payload, made})
	}
}

func (m *cacheModel) take(id string) ([]byte, bool) {
	i := m.find(id)
	if i < 0 {
		return nil, false
	}
	p := m.entries[i].payload
	m.entries = slices.Delete(m.entries, i, i+1)
	return p, true
}

func (m *cacheModel) setBound(bound, max int64) {
	m.bound = min(max, bound)
	for m.size() > m.bound {
		m.entries = m.entries[:len(m.entries)-1]
	}
}

// sizeClasses are payload sizes that are their allocation's (cap == len),
// as the model counts len.
var sizeClasses = []int{8, 16, 24, 32, 48, 64}

// TestPayloadCache_Model runs random puts, folds, takes, peeks, bounds and
// passing time on the cache and on cacheModel, and compares what each keeps.
func TestPayloadCache_Model(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		const max = 40 * entry16
		b := setupCache(max)
		m := &cacheModel{bound: max}
		var ids []string
		made := map[string]time.Time{}
		for range 3000 {
			switch op := r.IntN(20); {
			case op < 6 || len(ids) == 0:
				id := b.ids.Next()
				ids = append(ids, id)
				made[id] = b.clk.Now()
				p := bytes.Repeat([]byte{byte(op)}, sizeClasses[r.IntN(len(sizeClasses))])
				b.c.put(id, p)
				m.put(id, p, made[id], b.clk.Now())
			case op < 8: // a bulk enqueue's payloads, one put each in the model
				var bulk []modelEntry
				for range 1 + r.IntN(12) {
					id := b.ids.Next()
					ids = append(ids, id)
					made[id] = b.clk.Now()
					bulk = append(bulk, modelEntry{id, bytes.Repeat([]byte{'b'}, sizeClasses[r.IntN(len(sizeClasses))]), made[id]})
				}
				b.c.putAll(func(yield func(string, []byte) bool) {
					for _, e := range bulk {
						if !yield(e.id, e.payload) {
							return
						}
					}
				})
				for _, e := range bulk {
					m.put(e.id, e.payload, e.at, b.clk.Now())
				}
			case op < 10:
				id := ids[r.IntN(len(ids))]
				p := bytes.Repeat([]byte{'f'}, sizeClasses[r.IntN(len(sizeClasses))])
				b.c.replace(id, p)
				m.put(id, p, made[id], b.clk.Now())
			case op < 16:
				// Mostly the oldest, as dispatch takes them.
				id := ids[min(r.IntN(len(ids)), r.IntN(len(ids)))]
				got, gotOK := b.c.take(id)
				want, wantOK := m.take(id)
				require.Equal(t, wantOK, gotOK, "seed %d: take", seed)
				require.Equal(t, want, got, "seed %d: take", seed)
			case op < 17:
				bound := int64(r.IntN(50)) * entry16
				b.c.setBound(bound)
				m.setBound(bound, max)
			default:
				b.clk.Advance(time.Duration(r.IntN(20)) * time.Second)
			}
			require.Equal(t, m.size(), b.c.size, "seed %d: size", seed)
			require.Equal(t, len(m.entries), len(b.c.items), "seed %d: entries", seed)
			for _, e := range m.entries {
				p, ok := b.c.peek(e.id)
				require.True(t, ok, "seed %d: %s kept", seed, e.id)
				require.Equal(t, e.payload, p)
			}
		}
	}
}

// BenchmarkPayloadCache_HeapPerEntry reports the live heap of a full cache
// per entry beside what the bound counts for it (entryOverhead and the
// payload's allocation), for payloads of 128 bytes.
func BenchmarkPayloadCache_HeapPerEntry(b *testing.B) {
	const n = 100_000
	cb := setupCache(n * (128 + entryOverhead))
	ids := cb.newIDs(n)
	payload := bytes.Repeat([]byte{'x'}, 128)
	before := liveHeapBytes()
	for _, id := range ids {
		cb.c.put(id, payload)
	}
	after := liveHeapBytes()
	b.ReportMetric(float64(after-before)/float64(len(cb.c.items)), "heap-B/entry")
	b.ReportMetric(float64(cb.c.size)/float64(len(cb.c.items)), "counted-B/entry")
	runtime.KeepAlive(ids)
	runtime.KeepAlive(cb)
}

func liveHeapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
