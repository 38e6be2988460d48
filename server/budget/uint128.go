package budget

import "math/bits"

// u128 is an unsigned 128-bit integer. It carries only the operations the
// time_based arithmetic needs; see the bounds in pool.go for why none of
// them can overflow there. Operations wrap modulo 2^128 like Go's unsigned
// integers, so a caller outside those bounds gets a wrong answer, not a panic.
type u128 struct {
	hi, lo uint64
}

func u128Of(x uint64) u128 { return u128{lo: x} }

// mul64x64 returns the full product x·y.
func mul64x64(x, y uint64) u128 {
	hi, lo := bits.Mul64(x, y)
	return u128{hi: hi, lo: lo}
}

func (x u128) add(y u128) u128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, carry)
	return u128{hi: hi, lo: lo}
}

// sub returns x − y; y must not exceed x.
func (x u128) sub(y u128) u128 {
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, borrow)
	return u128{hi: hi, lo: lo}
}

// mul64 returns x·y; the product must fit in 128 bits.
func (x u128) mul64(y uint64) u128 {
	hi, lo := bits.Mul64(x.lo, y)
	return u128{hi: hi + x.hi*y, lo: lo}
}

// mul64Checked returns x·y and whether it fits in 128 bits; the product
// is meaningless when it does not.
func (x u128) mul64Checked(y uint64) (u128, bool) {
	hi, lo := bits.Mul64(x.lo, y)
	carryHi, mid := bits.Mul64(x.hi, y)
	hi, carry := bits.Add64(hi, mid, 0)
	return u128{hi: hi, lo: lo}, carryHi == 0 && carry == 0
}

func (x u128) less(y u128) bool {
	if x.hi != y.hi {
		return x.hi < y.hi
	}
	return x.lo < y.lo
}

// quoRem64 returns ⌊x/d⌋ and x mod d; d must be nonzero.
func (x u128) quoRem64(d uint64) (u128, uint64) {
	qhi, r := x.hi/d, x.hi%d
	// r < d, so the second step cannot overflow Div64.
	qlo, r := bits.Div64(r, x.lo, d)
	return u128{hi: qhi, lo: qlo}, r
}

// quoCeil64 returns ⌈x/d⌉; d must be nonzero.
func (x u128) quoCeil64(d uint64) u128 {
	q, r := x.quoRem64(d)
	if r != 0 {
		q = q.add(u128Of(1))
	}
	return q
}

// float64 returns x rounded to a float64 (relative error below 2^-52).
func (x u128) float64() float64 {
	return float64(x.hi)*0x1p64 + float64(x.lo)
}
