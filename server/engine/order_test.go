package engine

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/zizq/zizq/server/jobid"
)

// TestRecords_Sizes pins the bytes every queued job pays in the engine's
// three per-job structures: a record, an id index entry and a member of
// its group's set (issue 24: the server holds a queued job in 128 bytes of
// RSS, these included).
func TestRecords_Sizes(t *testing.T) {
	t.Parallel()
	require.EqualValues(t, 28, unsafe.Sizeof(jobRec{}), "jobRec")
	require.EqualValues(t, 20, unsafe.Sizeof(idEntry{}), "idEntry")
	require.EqualValues(t, 28, unsafe.Sizeof(item{}), "item")
}

// randomID draws an ID whose words are often equal to another's, so that
// comparisons reach every word.
func randomID(rng *rand.Rand) jobid.ID {
	word := func() uint64 {
		return []uint64{0, 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint64, rng.Uint64()}[rng.IntN(6)]
	}
	return jobid.ID{Hi: word(), Lo: word()}
}

// TestPackedID_AgreesWithID checks the packed ID against jobid.ID itself:
// the same value back, the same time, the same order.
func TestPackedID_AgreesWithID(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	for range 20000 {
		a, b := randomID(rng), randomID(rng)
		pa, pb := packID(a), packID(b)
		require.Equal(t, a, pa.unpack())
		require.Equal(t, a.Millis(), pa.millis(), "%v", a)
		require.Equal(t, a.Less(b), pa.less(pb), "%v < %v", a, b)
		require.Equal(t, a.String(), pa.String())
	}
}

// TestItem_OrdersAsItsKey checks that a member keeps its key, tag
// included, and orders as the key does, for tags up to the 32 bits of
// lead either side of the ID's time.
func TestItem_OrdersAsItsKey(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2, 2))
	leads := []int64{0, 1, -1, math.MaxInt32, math.MinInt32}
	randomKey := func() key {
		id := jobid.ID{Hi: uint64(1_700_000_000_000+rng.IntN(3))<<16 | uint64(rng.IntN(3)), Lo: uint64(rng.IntN(3))}
		return key{prio: uint16(rng.IntN(3)), tag: id.Millis() + leads[rng.IntN(len(leads))], id: id}
	}
	for range 20000 {
		a, b := randomKey(), randomKey()
		ia, ib := itemAt(a, 1), itemAt(b, 2)
		require.Equal(t, a, ia.k())
		require.Equal(t, a.tag, ia.tag())
		require.Equal(t, a.less(b), ia.less(ib), "%+v < %+v", a, b)
	}
}

// TestSlab_Leads checks that only chunks holding a record with a lead get
// room for leads, and that a freed record's lead does not pass to the
// record that reuses its slot.
func TestSlab_Leads(t *testing.T) {
	t.Parallel()
	var s slab
	for range slabChunk + 1 {
		s.alloc()
	}
	s.setLead(3, 0)
	require.Nil(t, s.leads[0], "a lead of 0 needs no room")
	s.setLead(slabChunk, -7)
	require.Nil(t, s.leads[0])
	require.EqualValues(t, -7, s.lead(slabChunk))
	require.EqualValues(t, 0, s.lead(3))
	s.release(slabChunk)
	require.Equal(t, int32(slabChunk), s.alloc(), "the freed slot is reused")
	require.EqualValues(t, 0, s.lead(slabChunk), "with no lead")
}
