package budget

import (
	"math"
	"slices"
)

// every is a Schedule of count resets, period ns apart from origin (the
// first is origin itself).
type every struct{ origin, period, count int64 }

func (s every) Next(after int64) int64 {
	if after < s.origin {
		if s.count <= 0 {
			return math.MaxInt64
		}
		return s.origin
	}
	// Both differences are exact in uint64: after ≥ origin, MaxInt64 ≥ origin.
	k := (uint64(after)-uint64(s.origin))/uint64(s.period) + 1
	room := uint64(math.MaxInt64) - uint64(s.origin)
	if k >= uint64(s.count) || k > room/uint64(s.period) {
		return math.MaxInt64
	}
	return int64(uint64(s.origin) + k*uint64(s.period))
}

// instants is a Schedule of the resets listed, in increasing order.
type instants []int64

func (s instants) Next(after int64) int64 {
	i, found := slices.BinarySearch(s, after)
	if found {
		i++
	}
	if i == len(s) {
		return math.MaxInt64
	}
	return s[i]
}

// counting counts the calls to its Schedule's Next.
type counting struct {
	Schedule
	calls *int
}

func (s counting) Next(after int64) int64 {
	*s.calls++
	return s.Schedule.Next(after)
}

// stuck is a broken Schedule whose next reset is always the time asked.
type stuck struct{}

func (stuck) Next(after int64) int64 { return after }
