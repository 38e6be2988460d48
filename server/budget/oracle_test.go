package budget

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// oracle is an independent model of a Pool: the time_based level is an exact
// rational number of tokens, min(C, level + (t−t0)·A/(D·10^6)), with no
// notion of units.
type oracle struct {
	kind       Kind
	allocation int64
	durationMs int64
	capacity   int64
	rate       *big.Rat // tokens per nanosecond (time_based)
	level      *big.Rat // tokens at time last (time_based)
	last       int64
	held       int64 // cost debited and not yet released, any kind
}

func newOracle(kind Kind, allocation, durationMs, burst, now int64) *oracle {
	o := &oracle{}
	o.reconfigure(allocation, durationMs, burst, kind, now)
	return o
}

func (o *oracle) at(now int64) *big.Rat {
	if now <= o.last {
		return new(big.Rat).Set(o.level)
	}
	dt := new(big.Rat).SetInt(new(big.Int).Sub(big.NewInt(now), big.NewInt(o.last)))
	l := new(big.Rat).Add(o.level, dt.Mul(dt, o.rate))
	if c := new(big.Rat).SetInt64(o.capacity); l.Cmp(c) > 0 {
		return c
	}
	return l
}

func (o *oracle) canPay(cost, now int64) bool {
	switch {
	case cost <= 0:
		return true
	case o.kind == WhileInFlight:
		return cost <= o.allocation-o.held
	case cost > o.capacity:
		return false
	}
	return o.at(now).Cmp(new(big.Rat).SetInt64(cost)) >= 0
}

func (o *oracle) debit(cost, now int64) {
	if cost <= 0 {
		return
	}
	o.held += cost
	if o.kind == TimeBased {
		o.level = o.at(now).Sub(o.at(now), new(big.Rat).SetInt64(cost))
		o.last = max(o.last, now)
	}
}

func (o *oracle) release(cost int64) { o.held -= cost }

func (o *oracle) available(now int64) *big.Rat {
	if o.kind == WhileInFlight {
		return new(big.Rat).SetInt64(o.allocation - o.held)
	}
	return o.at(now)
}

func (o *oracle) affordableAt(cost, now int64) (int64, bool) {
	if o.kind == WhileInFlight || cost > o.capacity {
		return 0, false
	}
	if o.canPay(cost, now) {
		return now, true
	}
	// Smallest integer k with level + k·rate ≥ cost: ⌈(cost − level)/rate⌉.
	k := new(big.Rat).Sub(new(big.Rat).SetInt64(cost), o.at(now))
	k.Quo(k, o.rate)
	q, m := new(big.Int).DivMod(k.Num(), k.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	at := q.Add(q, big.NewInt(max(now, o.last)))
	if !at.IsInt64() {
		return math.MaxInt64, true
	}
	return at.Int64(), true
}

func (o *oracle) reconfigure(allocation, durationMs, burst int64, kind Kind, now int64) {
	wasTimeBased := o.kind == TimeBased && o.level != nil
	var level *big.Rat
	if wasTimeBased {
		level = o.at(now)
		o.last = max(o.last, now)
	}
	o.kind, o.allocation, o.durationMs = kind, allocation, durationMs
	o.capacity = allocation
	if kind == WhileInFlight {
		o.durationMs, o.level = 0, nil
		return
	}
	if burst > 0 {
		o.capacity = burst
	}
	unit := new(big.Int).Mul(big.NewInt(durationMs), big.NewInt(1e6))
	o.rate = new(big.Rat).SetFrac(big.NewInt(allocation), unit)
	c := new(big.Rat).SetInt64(o.capacity)
	if !wasTimeBased {
		o.level, o.last = c, now
		return
	}
	// Keep the tokens, rounded down to a whole number of the new units
	// (1/(D·10^6) token), and clamp them to the new capacity.
	scaled := new(big.Rat).Mul(level, new(big.Rat).SetInt(unit))
	floor := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	o.level = new(big.Rat).SetFrac(floor, unit)
	if o.level.Cmp(c) > 0 {
		o.level = c
	}
}

// tb is what the checks need from a *testing.T.
type tb interface {
	require.TestingT
	Helper()
}

// checkAgainst compares everything observable about p at time now, for a
// job of the given cost, with the oracle.
func checkAgainst(t tb, p *Pool, o *oracle, cost, now int64) {
	t.Helper()
	// Formatted only on failure: these checks run on every step.
	ctx := []any{"kind=%v A=%d D=%d C=%d cost=%d now=%d last=%d", o.kind, o.allocation, o.durationMs, o.capacity, cost, now, o.last}

	require.Equal(t, o.kind, p.Kind(), ctx...)
	require.Equal(t, o.capacity, p.Capacity(), ctx...)
	require.Equal(t, o.held, p.held, ctx...)
	if o.kind == WhileInFlight {
		require.Equal(t, o.held, p.Held(), ctx...)
	} else {
		require.Zero(t, p.Held(), ctx...)
	}
	require.Equal(t, o.canPay(cost, now), p.CanPay(cost, now), ctx...)

	wantAt, wantOK := o.affordableAt(cost, now)
	gotAt, gotOK := p.AffordableAt(cost, now)
	require.Equal(t, wantOK, gotOK, ctx...)
	require.Equal(t, wantAt, gotAt, ctx...)

	want, _ := o.available(now).Float64()
	got := p.Available(now)
	if math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
		require.Fail(t, fmt.Sprintf("available %v, want %v", got, want), ctx...)
	}
}

// debitRecord is one successful debit: its cost and the pool's time then.
type debitRecord struct {
	at   int64
	cost int64
}

// checkWindows returns an error if some run of consecutive debits spent more
// than capacity + allocation·W/duration, W being the time between the first
// and the last debit of the run.
//
// For debits i..j with prefix sums P, the bound is
// (P_j − r·T_j) − (P_{i−1} − r·T_i) ≤ C, so it is enough to compare each j
// with the smallest P_{i−1} − r·T_i seen so far: every window is covered in
// one pass.
func checkWindows(records []debitRecord, allocation, durationMs, capacity int64) error {
	rate := new(big.Rat).SetFrac(big.NewInt(allocation), new(big.Int).Mul(big.NewInt(durationMs), big.NewInt(1e6)))
	c := new(big.Rat).SetInt64(capacity)
	prefix := new(big.Rat)
	var lowest *big.Rat
	for j, r := range records {
		rt := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(r.at))
		x := new(big.Rat).Sub(prefix, rt)
		if lowest == nil || x.Cmp(lowest) < 0 {
			lowest = x
		}
		prefix.Add(prefix, new(big.Rat).SetInt64(r.cost))
		spent := new(big.Rat).Sub(prefix, rt)
		if spent.Sub(spent, lowest).Cmp(c) > 0 {
			return fmt.Errorf("debit %d at %d: a window ending here spent %s tokens, more than the capacity %d plus the refill", j, r.at, spent.FloatString(6), capacity)
		}
	}
	return nil
}

func TestCheckWindows(t *testing.T) {
	t.Parallel()

	const sec = int64(1e9)
	// 6 per minute: 6 at once, then one per 10 s is exactly at the bound.
	ok := []debitRecord{{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 3}, {10 * sec, 1}, {20 * sec, 1}}
	require.NoError(t, checkWindows(ok, 6, 60000, 7))
	require.Error(t, checkWindows(ok, 6, 60000, 6))
	// One nanosecond early is over, even in a window that starts later.
	early := []debitRecord{{0, 6}, {10*sec - 1, 1}}
	require.Error(t, checkWindows(early, 6, 60000, 6))
	// The window over the limit need not start at the first debit.
	late := []debitRecord{{0, 1}, {100 * sec, 4}, {110*sec - 1, 1}}
	require.Error(t, checkWindows(late, 6, 60000, 4))
	require.NoError(t, checkWindows(late, 6, 60000, 5))
}

// interesting configuration values, including both ends of every range.
var (
	allocations = []int64{1, 2, 6, 7, 100, 1000, MaxAllocation - 1, MaxAllocation}
	durations   = []int64{1, 3, 1000, 60000, 300000, 3600000, 86400000, MaxDurationMs - 1, MaxDurationMs}
	bursts      = []int64{0, 0, 0, 1, 2, 20, 1000, MaxAllocation}
)

func randConfig(rng *rand.Rand) (allocation, durationMs, burst int64) {
	allocation = allocations[rng.IntN(len(allocations))]
	if rng.IntN(3) == 0 {
		allocation = 1 + rng.Int64N(MaxAllocation)
	}
	durationMs = durations[rng.IntN(len(durations))]
	if rng.IntN(3) == 0 {
		durationMs = 1 + rng.Int64N(MaxDurationMs)
	}
	burst = bursts[rng.IntN(len(bursts))]
	if rng.IntN(4) == 0 {
		burst = 1 + rng.Int64N(MaxAllocation)
	}
	return allocation, durationMs, burst
}

// satAdd returns now+d clamped to the int64 range.
func satAdd(now, d int64) int64 {
	switch {
	case d > 0 && now > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && now < math.MinInt64-d:
		return math.MinInt64
	}
	return now + d
}

// TestPool_AgainstOracle runs random sequences of (advance time, try to
// debit) on time_based pools and compares every answer with the oracle, then
// checks the window bound over the whole sequence.
func TestPool_AgainstOracle(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(20240601, 17))
	for seq := range 200 {
		allocation, durationMs, burst := randConfig(rng)
		now := []int64{0, 0, math.MinInt64 + 1, 1788215727072 * 1e6, math.MaxInt64 - 1e15}[rng.IntN(5)]
		p := NewTimeBased(allocation, durationMs, burst, now)
		o := newOracle(TimeBased, allocation, durationMs, burst, now)
		c := p.Capacity()
		// Nanoseconds per token, clamped so the step sizes stay int64.
		perToken := int64(min(float64(durationMs)*1e6/float64(allocation), math.MaxInt64/8))

		var records []debitRecord
		// The pool's time moves only at debits, and never backwards: a query
		// at a later time commits nothing.
		effective := now
		for range 250 {
			switch rng.IntN(10) {
			case 0: // no time passes
			case 1:
				now = satAdd(now, rng.Int64N(1000))
			case 2:
				now = satAdd(now, -rng.Int64N(1e9)) // the caller's clock went back
			case 3:
				now = satAdd(now, rng.Int64N(1<<62))
			case 4:
				if at, ok := p.AffordableAt(min(c, 1+rng.Int64N(3)), now); ok {
					now = at
				}
			default:
				now = satAdd(now, rng.Int64N(perToken*2+1))
			}

			cost := 1 + rng.Int64N(min(c, 10))
			switch rng.IntN(8) {
			case 0:
				cost = c
			case 1:
				cost = c + 1
			case 2:
				cost = 1 + rng.Int64N(c)
			}
			checkAgainst(t, &p, o, cost, now)
			if o.canPay(cost, now) {
				p.Debit(cost, now)
				o.debit(cost, now)
				effective = max(effective, now)
				records = append(records, debitRecord{at: effective, cost: cost})
			}
			checkAgainst(t, &p, o, cost, now)
		}
		require.NoError(t, checkWindows(records, allocation, durationMs, c), "sequence %d: A=%d D=%d C=%d %v", seq, allocation, durationMs, c, records)
	}
}

// TestPool_StandingBacklog debits whenever a job becomes affordable, as the
// engine does under a standing backlog, and checks that the debits come at
// exactly allocation/duration over 10,000 of them: within one job's cost of
// capacity + allocation·T/duration, however late each wake-up is, as long as
// the pool cannot fill up during the lateness.
func TestPool_StandingBacklog(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name                          string
		allocation, durationMs, burst int64
		maxCost, maxLateNs            int64
	}{
		{"SixPerMinute", 6, 60000, 0, 1, 0},
		{"SixPerMinuteBurstOne", 6, 60000, 1, 1, 0},
		{"SixPerMinuteLate", 6, 60000, 0, 1, 2e6},
		{"SixPerMinuteBurstOneLate", 6, 60000, 1, 1, 2e6},
		{"HundredPerFiveMinutes", 100, 300000, 0, 1, 0},
		{"HundredPerFiveMinutesLate", 100, 300000, 0, 1, 2e6},
		{"HundredPerFiveMinutesCostsLate", 100, 300000, 0, 3, 2e6},
		{"ThousandPerSecondLate", 1000, 1000, 0, 1, 2e6},
		{"ThousandPerSecondCostsLate", 1000, 1000, 50, 5, 2e6},
		{"SevenPerThreeMs", 7, 3, 0, 1, 0},
		{"SevenPerThreeMsLate", 7, 3, 0, 1, 2e6},
		{"ThreePerDayLate", 3, 86400000 + 7, 0, 1, 2e6},
		{"HugeAllocation", MaxAllocation, 3600000, 0, 1, 0},
		{"HugeAllocationLate", MaxAllocation, 3600000, 0, 1, 2e6},
		{"HugeBurstCostsLate", 1000, 60000, MaxAllocation, 7, 2e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			rng := rand.New(rand.NewPCG(uint64(tt.allocation), uint64(tt.durationMs)))
			unit := new(big.Int).Mul(big.NewInt(tt.durationMs), big.NewInt(1e6))
			p := NewTimeBased(tt.allocation, tt.durationMs, tt.burst, 0)
			// The backlog empties the pool at once (one big debit keeps
			// this quick for huge capacities), then jobs take every token.
			debited := p.Capacity()
			p.Debit(debited, 0)
			var now, lastDebit, n, totalLate int64
			cost := 1 + rng.Int64N(tt.maxCost)
			for n < 10000 {
				// Drain fully at every wake-up, even past the 10,000th.
				for p.CanPay(cost, now) {
					p.Debit(cost, now)
					debited += cost
					lastDebit = now
					n++
					if tt.maxCost == 1 && tt.maxLateNs == 0 {
						// The n-th token after the first burst is there at
						// exactly ⌈n·D·10^6/A⌉ ns.
						want, rem := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(n), unit), big.NewInt(tt.allocation), new(big.Int))
						if rem.Sign() != 0 {
							want.Add(want, big.NewInt(1))
						}
						require.Equal(t, want.Int64(), now, "debit %d", n)
					}
					cost = 1 + rng.Int64N(tt.maxCost)
				}
				at, ok := p.AffordableAt(cost, now)
				require.True(t, ok)
				require.Greater(t, at, now)
				late := rng.Int64N(tt.maxLateNs + 1)
				totalLate += late
				now = at + late
			}

			rate := new(big.Rat).SetFrac(big.NewInt(tt.allocation), unit)
			// short = C + A·T/(D·10^6) − debited: what could have been spent by T but was not.
			short := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(lastDebit))
			short.Add(short, new(big.Rat).SetInt64(p.Capacity()))
			short.Sub(short, new(big.Rat).SetInt64(debited))
			require.GreaterOrEqual(t, short.Sign(), 0, "over-issued by %s", short.FloatString(9))

			maxCost := new(big.Rat).SetInt64(tt.maxCost)
			// A wake-up finds at most maxCost + A·(maxLate+1)/(D·10^6) tokens.
			peak := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(tt.maxLateNs+1))
			peak.Add(peak, maxCost)
			if peak.Cmp(new(big.Rat).SetInt64(p.Capacity())) <= 0 {
				require.Negative(t, short.Cmp(maxCost), "drifted: %s tokens short", short.FloatString(9))
				// Nothing was lost: what was not debited is still in the pool.
				left, _ := short.Float64()
				require.InDelta(t, left, p.Available(lastDebit), 1e-6)
				return
			}
			// The pool can fill up while a wake-up is late (burst 1): the
			// tokens above the capacity are lost, as min(C, …) says, but
			// never more than the refill during the lateness.
			lost := new(big.Rat).Mul(rate, new(big.Rat).SetInt64(totalLate))
			require.LessOrEqual(t, short.Cmp(lost.Add(lost, maxCost)), 0, "lost %s tokens", short.FloatString(9))
		})
	}
}

// fuzzBytes decodes fuzz input; past the end it yields zeros.
type fuzzBytes []byte

func (b *fuzzBytes) byte() byte {
	if len(*b) == 0 {
		return 0
	}
	x := (*b)[0]
	*b = (*b)[1:]
	return x
}

func (b *fuzzBytes) uint64() uint64 {
	var buf [8]byte
	n := copy(buf[:], *b)
	*b = (*b)[n:]
	return binary.BigEndian.Uint64(buf[:])
}

func (b *fuzzBytes) config() (kind Kind, allocation, durationMs, burst int64) {
	kind = Kind(b.byte() % 2)
	allocation = allocations[int(b.byte())%len(allocations)]
	if x := b.byte(); x >= 200 {
		allocation = 1 + int64(b.uint64()%MaxAllocation)
	}
	durationMs = durations[int(b.byte())%len(durations)]
	if x := b.byte(); x >= 200 {
		durationMs = 1 + int64(b.uint64()%MaxDurationMs)
	}
	burst = bursts[int(b.byte())%len(bursts)]
	if x := b.byte(); x >= 200 {
		burst = 1 + int64(b.uint64()%MaxAllocation)
	}
	if kind == WhileInFlight {
		durationMs, burst = 0, 0
	}
	return kind, allocation, durationMs, burst
}

func (b *fuzzBytes) cost(capacity int64) int64 {
	switch b.byte() % 8 {
	case 0:
		return 0
	case 1:
		return capacity
	case 2:
		return capacity + 1
	case 3:
		return 1 + int64(b.uint64()%uint64(capacity))
	default:
		return 1 + int64(b.byte())%min(capacity, 16)
	}
}

// runOps decodes a pool and a sequence of operations from data, applies them
// to a Pool and to the oracle, and checks that they agree after every step.
func runOps(t *testing.T, data []byte) {
	b := fuzzBytes(data)
	kind, allocation, durationMs, burst := b.config()
	now := int64(b.uint64())
	var p Pool
	if kind == TimeBased {
		p = NewTimeBased(allocation, durationMs, burst, now)
	} else {
		p = NewWhileInFlight(allocation)
	}
	o := newOracle(kind, allocation, durationMs, burst, now)
	var inFlight []int64

	for step := 0; len(b) > 0 && step < 400; step++ {
		switch b.byte() % 8 {
		case 0:
			now = satAdd(now, int64(b.byte())*int64(b.byte()+1)*1000)
		case 1:
			now = satAdd(now, int64(b.uint64()>>(1+b.byte()%63)))
		case 2:
			now = satAdd(now, -int64(b.byte())*1e6)
		case 3, 4:
			cost := b.cost(p.Capacity())
			checkAgainst(t, &p, o, cost, now)
			if o.canPay(cost, now) {
				p.Debit(cost, now)
				o.debit(cost, now)
				inFlight = append(inFlight, cost)
			}
		case 5:
			if len(inFlight) > 0 {
				i := int(b.byte()) % len(inFlight)
				p.Release(inFlight[i])
				o.release(inFlight[i])
				inFlight = append(inFlight[:i], inFlight[i+1:]...)
			}
		case 6:
			kind, allocation, durationMs, burst := b.config()
			p.Reconfigure(allocation, durationMs, burst, kind, now)
			o.reconfigure(allocation, durationMs, burst, kind, now)
		case 7:
			// Jump to the first affordable nanosecond; one before it must not pay.
			cost := b.cost(p.Capacity())
			if at, ok := p.AffordableAt(cost, now); ok {
				if at > now && at != math.MaxInt64 {
					require.False(t, p.CanPay(cost, at-1), "cost %d payable before %d", cost, at)
				}
				now = at
				if at != math.MaxInt64 || p.CanPay(cost, at) {
					require.True(t, p.CanPay(cost, at), "cost %d not payable at %d", cost, at)
				}
			}
		}
		checkAgainst(t, &p, o, 1, now)
	}
}

// TestPool_RandomOps is the property test with every operation: debits,
// releases, reconfigurations (kind changes included) and clock jumps.
func TestPool_RandomOps(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(7, 11))
	for range 300 {
		data := make([]byte, 64+rng.IntN(1500))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		runOps(t, data)
	}
}

func FuzzPool(f *testing.F) {
	// time_based 6/min from 0: burst, refill, reconfigure to 100/5 min.
	f.Add([]byte{1, 2, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1, 3, 7, 1,
		7, 7, 1, 3, 7, 1, 0, 200, 200, 6, 1, 3, 0, 4, 0, 0, 0, 7, 1})
	// while_in_flight 5 with costs, releases, lowered below held, to time_based and back.
	f.Add([]byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 7, 2, 3, 7, 2, 3, 7, 2, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 3, 7, 1,
		6, 1, 2, 0, 3, 0, 0, 0, 3, 7, 3, 5, 1, 6, 0, 5, 0, 0, 0, 0, 0, 5, 0, 3, 7, 1})
	// Extremes: A = C = 2^31−1 and D = 2^53 ms, starting near MinInt64.
	f.Add([]byte{1, 7, 0, 8, 0, 7, 0, 0x80, 0, 0, 0, 0, 0, 0, 1,
		4, 1, 1, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 1, 7, 2, 1, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		6, 1, 0, 0, 0, 0, 0, 0, 3, 3, 7, 5})
	// D = 1 ms with huge jumps.
	f.Add([]byte{1, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		3, 1, 1, 0x40, 0, 0, 0, 0, 0, 0, 0, 3, 3, 1, 7, 1, 2, 9, 3, 2, 6, 1, 5, 0, 8, 0, 0, 0, 7, 2})
	rng := rand.New(rand.NewPCG(3, 5))
	for range 16 {
		data := make([]byte, 256)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		runOps(t, data)
	})
}

// recorder is a require.TestingT that records a failure instead of failing
// the test, so that tests can check that the checks themselves can fail.
type recorder struct{ failed bool }

type failNow struct{}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) FailNow()              { r.failed = true; panic(failNow{}) }
func (r *recorder) Helper()               {}

// fails reports whether check fails against a recorder.
func fails(check func(tb)) bool {
	r := &recorder{}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(failNow); !ok {
					panic(v)
				}
			}
		}()
		check(r)
	}()
	return r.failed
}

func TestCheckAgainst_DetectsEarlyToken(t *testing.T) {
	t.Parallel()

	p := NewTimeBased(6, 60000, 0, 0)
	o := newOracle(TimeBased, 6, 60000, 0, 0)
	for range 6 {
		p.Debit(1, 0)
		o.debit(1, 0)
	}
	require.False(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 10e9-1) }))
	// One nanosecond's worth of refill too much: the token comes 1 ns early.
	p.level = p.level.add(u128Of(6))
	require.True(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 10e9-1) }))
	require.True(t, fails(func(t tb) { checkAgainst(t, &p, o, 1, 0) }))
}
