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

func encode(hi, lo uint64) string {
	var out [Len]byte
	for i := Len - 1; i >= 0; i-- {
		var rem uint64
		hi, rem = bits.Div64(0, hi, 36)
		lo, rem = bits.Div64(rem, lo, 36)
		out[i] = digits[rem]
	}
	return string(out[:])
}

func decode(s string) (hi, lo uint64, ok bool) {
	if len(s) != Len {
		return 0, 0, false
	}
	for i := 0; i < Len; i++ {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'z':
			d = uint64(c-'a') + 10
		default:
			return 0, 0, false
		}
		// (hi,lo) = (hi,lo)*36 + d, rejecting overflow of 128 bits.
		h1, h0 := bits.Mul64(hi, 36)
		l1, l0 := bits.Mul64(lo, 36)
		if h1 != 0 {
			return 0, 0, false
		}
		var carry uint64
		lo, carry = bits.Add64(l0, d, 0)
		hi, carry = bits.Add64(h0, l1, carry)
		if carry != 0 {
			return 0, 0, false
		}
	}
	return hi, lo, true
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
