package budget

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func (x u128) big() *big.Int {
	b := new(big.Int).SetUint64(x.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(x.lo))
}

// randU128 returns a value below 2^bits, with bits drawn at random too so
// that small and boundary magnitudes both come up.
func randU128(rng *rand.Rand, maxBits uint) u128 {
	x := u128{hi: rng.Uint64(), lo: rng.Uint64()}
	n := 128 - rng.UintN(maxBits+1)
	switch {
	case n >= 128:
		return u128{}
	case n >= 64:
		return u128{lo: x.hi >> (n - 64)}
	case n > 0:
		return u128{hi: x.hi >> n, lo: x.lo>>n | x.hi<<(64-n)}
	}
	return x
}

// requireBig compares big integers by value (their internal forms differ).
func requireBig(t *testing.T, want, got *big.Int, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, want.String(), got.String(), msgAndArgs...)
}

func TestU128_AgainstBigInt(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(128, 1))
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	for range 20000 {
		x, y := randU128(rng, 128), randU128(rng, 128)
		bx, by := x.big(), y.big()
		d := rng.Uint64() >> rng.UintN(64)
		if d == 0 {
			d = 1
		}
		bd := new(big.Int).SetUint64(d)

		sum := new(big.Int).Add(bx, by)
		sum.Mod(sum, two128)
		requireBig(t, sum, x.add(y).big(), "add %v %v", bx, by)

		require.Equal(t, bx.Cmp(by) < 0, x.less(y))
		require.False(t, x.less(x))
		if !x.less(y) {
			requireBig(t, new(big.Int).Sub(bx, by), x.sub(y).big(), "sub %v %v", bx, by)
		}

		a, b := rng.Uint64(), rng.Uint64()
		requireBig(t, new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b)), mul64x64(a, b).big())

		// mul64 only where the product fits, as the pool guarantees.
		small := randU128(rng, 100)
		m := rng.Uint64() >> 36
		requireBig(t, new(big.Int).Mul(small.big(), new(big.Int).SetUint64(m)), small.mul64(m).big())

		// mul64Checked on any operands: exact when it fits, told when not.
		k := rng.Uint64() >> rng.UintN(64)
		prod := new(big.Int).Mul(bx, new(big.Int).SetUint64(k))
		got, fits := x.mul64Checked(k)
		require.Equal(t, prod.Cmp(two128) < 0, fits, "mul64Checked %v %v", bx, k)
		if fits {
			requireBig(t, prod, got.big())
		}

		q, r := x.quoRem64(d)
		bq, br := new(big.Int).QuoRem(bx, bd, new(big.Int))
		requireBig(t, bq, q.big())
		require.Equal(t, br.Uint64(), r)
		if br.Sign() != 0 {
			bq.Add(bq, big.NewInt(1))
		}
		requireBig(t, bq, x.quoCeil64(d).big())

		f, _ := new(big.Float).SetInt(bx).Float64()
		require.InEpsilon(t, f+1, x.float64()+1, 1e-15)
	}
}

func TestU128_Edges(t *testing.T) {
	t.Parallel()

	maxU := u128{hi: math.MaxUint64, lo: math.MaxUint64}
	require.Equal(t, u128{hi: 1}, u128{lo: math.MaxUint64}.add(u128Of(1)))
	require.Equal(t, u128{lo: math.MaxUint64}, u128{hi: 1}.sub(u128Of(1)))
	require.Equal(t, u128{hi: math.MaxUint64 - 1, lo: 1}, mul64x64(math.MaxUint64, math.MaxUint64))
	q, r := maxU.quoRem64(math.MaxUint64)
	require.Equal(t, u128{hi: 1, lo: 1}, q)
	require.Zero(t, r)
	require.Equal(t, u128{hi: 1, lo: 1}, maxU.quoCeil64(math.MaxUint64))
	require.Equal(t, u128Of(3), u128Of(7).quoCeil64(3))
	require.Equal(t, u128Of(2), u128Of(6).quoCeil64(3))
	require.Equal(t, 0x1p128, maxU.float64())

	// The carries of mul64Checked: from the low product into hi, and past hi.
	_, fits := u128{hi: 1, lo: math.MaxUint64}.mul64Checked(math.MaxUint64)
	require.False(t, fits)
	got, fits := u128{lo: math.MaxUint64}.mul64Checked(math.MaxUint64)
	require.True(t, fits)
	require.Equal(t, u128{hi: math.MaxUint64 - 1, lo: 1}, got)
	_, fits = u128{hi: 1 << 63}.mul64Checked(2)
	require.False(t, fits)
	_, fits = u128{hi: 1<<63 - 1, lo: math.MaxUint64}.mul64Checked(2)
	require.True(t, fits)
	// hi·y fits but adding the low product's carry does not.
	_, fits = u128{hi: math.MaxUint64 >> 1, lo: math.MaxUint64}.mul64Checked(2)
	require.True(t, fits)
	_, fits = u128{hi: 0x5555555555555555, lo: math.MaxUint64}.mul64Checked(3)
	require.False(t, fits)
}
