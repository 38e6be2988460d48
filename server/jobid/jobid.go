// Package jobid generates job IDs in the SCRU128 layout: a 48-bit millisecond
// timestamp, a 24-bit and a 24-bit counter and 32 random bits, written as 25
// lowercase base-36 digits. IDs from one Generator strictly increase, even
// when the wall clock steps back.
package jobid

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"
	"sync"
	"time"
)

// Len is the length of an ID string.
const Len = 25

const maxCounter = 1<<24 - 1

// Generator produces strictly increasing IDs. It is safe for concurrent use.
type Generator struct {
	mu        sync.Mutex
	now       func() time.Time
	timestamp uint64
	counterHi uint32
	counterLo uint32
}

// New returns a generator reading time from now (time.Now when nil).
func New(now func() time.Time) *Generator {
	if now == nil {
		now = time.Now
	}
	return &Generator{now: now}
}

// Observe makes every later ID sort after id, so IDs keep increasing across
// restarts even if the clock stepped back. Malformed IDs are ignored.
func (g *Generator) Observe(id string) {
	hi, lo, ok := decode(id)
	if !ok {
		return
	}
	ts := hi >> 16
	chi := uint32(hi&0xffff)<<8 | uint32(lo>>56)
	clo := uint32(lo>>32) & maxCounter
	g.mu.Lock()
	defer g.mu.Unlock()
	if ts > g.timestamp || (ts == g.timestamp && (chi > g.counterHi || (chi == g.counterHi && clo > g.counterLo))) {
		g.timestamp, g.counterHi, g.counterLo = ts, chi, clo
	}
}

// Next returns a new ID.
func (g *Generator) Next() string {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	r := binary.LittleEndian.Uint64(rnd[:])
	ms := uint64(g.now().UnixMilli())

	g.mu.Lock()
	if ms > g.timestamp {
		g.timestamp = ms
		g.counterHi = uint32(r>>32) & maxCounter
		g.counterLo = uint32(r>>8) & (maxCounter >> 1) // leave room to count up
	} else {
		g.counterLo++
		if g.counterLo > maxCounter {
			g.counterLo = 0
			g.counterHi++
			if g.counterHi > maxCounter {
				g.counterHi = 0
				g.timestamp++
			}
		}
	}
	hi := g.timestamp<<16 | uint64(g.counterHi>>8)
	lo := uint64(g.counterHi&0xff)<<56 | uint64(g.counterLo)<<32 | uint64(uint32(r))
	g.mu.Unlock()
	return encode(hi, lo)
}

const digits = "0123456789abcdefghijklmnopqrstuvwxyz"

// chunk is 36^12, the largest power of 36 below 2^64: an ID is written and
// read twelve digits at a time with 64-bit arithmetic, and only the joins
// of the chunks need 128 bits (the engine parses every ID of a backlog at
// start-up and writes one for every job it hands out).
const (
	chunkDigits = 12
	chunk       = 4738381338321616896 // 36^12
)

// digitValue maps a byte to its base-36 value, or 0xff.
var digitValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(digits); i++ {
		t[digits[i]] = byte(i)
	}
	return t
}()

// An ID's value is (a·36^12 + b)·36 + c: a and b are its first and next
// twelve digits, c the last.

func encode(hi, lo uint64) string {
	var out [Len]byte
	var c, b uint64
	hi, c = bits.Div64(0, hi, 36)
	lo, c = bits.Div64(c, lo, 36)
	// 2^128/36 < 36^24: the quotient by 36^12 fits in 64 bits.
	a, b := bits.Div64(hi, lo, chunk)
	out[Len-1] = digits[c]
	writeChunk(out[chunkDigits:Len-1], b)
	writeChunk(out[:chunkDigits], a)
	return string(out[:])
}

// writeChunk writes v (< 36^12) as twelve digits.
func writeChunk(out []byte, v uint64) {
	for i := chunkDigits - 1; i >= 0; i-- {
		out[i] = digits[v%36]
		v /= 36
	}
}

func decode(s string) (hi, lo uint64, ok bool) {
	if len(s) != Len {
		return 0, 0, false
	}
	a, okA := decodeChunk(s[:chunkDigits])
	b, okB := decodeChunk(s[chunkDigits : Len-1])
	c := digitValue[s[Len-1]]
	if !okA || !okB || c == 0xff {
		return 0, 0, false
	}
	// a·36^12 + b < 36^24 < 2^125; times 36 plus c may pass 2^128.
	hi, lo = bits.Mul64(a, chunk)
	var carry uint64
	lo, carry = bits.Add64(lo, b, 0)
	hi += carry
	h1, h0 := bits.Mul64(hi, 36)
	l1, l0 := bits.Mul64(lo, 36)
	lo, carry = bits.Add64(l0, uint64(c), 0)
	hi, carry = bits.Add64(h0, l1, carry)
	return hi, lo, h1 == 0 && carry == 0
}

// decodeChunk reads twelve base-36 digits.
func decodeChunk(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < chunkDigits; i++ {
		d := digitValue[s[i]]
		if d == 0xff {
			return 0, false
		}
		v = v*36 + uint64(d)
	}
	return v, true
}

// ID is a job ID as its 128-bit value. IDs compare as their strings do:
// Less is the string order of the 25-digit base-36 form.
type ID struct{ Hi, Lo uint64 }

// Parse reads an ID string; false if it is not 25 lowercase base-36 digits
// that fit in 128 bits.
func Parse(s string) (ID, bool) {
	hi, lo, ok := decode(s)
	return ID{hi, lo}, ok
}

// String returns the 25-digit base-36 form.
func (id ID) String() string { return encode(id.Hi, id.Lo) }

// Less reports whether id sorts before other.
func (id ID) Less(other ID) bool {
	if id.Hi != other.Hi {
		return id.Hi < other.Hi
	}
	return id.Lo < other.Lo
}

// Millis returns the ID's timestamp: when it was generated, in ms since
// the Unix epoch.
func (id ID) Millis() int64 { return int64(id.Hi >> 16) }
