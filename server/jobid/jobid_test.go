package jobid

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestGenerator_Next(t *testing.T) {
	t.Parallel()
	t.Run("FormatAndOrder", func(t *testing.T) {
		g := New(nil)
		prev := ""
		for i := 0; i < 100000; i++ {
			id := g.Next()
			require.Len(t, id, Len)
			require.Regexp(t, `^[0-9a-z]{25}$`, id)
			require.Greater(t, id, prev)
			prev = id
		}
	})
	t.Run("ClockStepsBack", func(t *testing.T) {
		now := time.UnixMilli(1788215727072)
		g := New(func() time.Time { return now })
		a := g.Next()
		now = now.Add(-time.Hour)
		b := g.Next()
		require.Greater(t, b, a)
	})
	t.Run("TimestampPrefix", func(t *testing.T) {
		now := time.UnixMilli(1788216589726)
		g := New(func() time.Time { return now })
		id := g.Next()
		hi, _, ok := decode(id)
		require.True(t, ok)
		require.Equal(t, uint64(1788216589726), hi>>16)
		// Zizq IDs from the same era start the same way (seed: 03gsa8rj...).
		require.Equal(t, "03gsa8", id[:6])
	})
	t.Run("Concurrent", func(t *testing.T) {
		g := New(nil)
		var mu sync.Mutex
		seen := map[string]bool{}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ {
					id := g.Next()
					mu.Lock()
					seen[id] = true
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Len(t, seen, 16000)
	})
}

func TestGenerator_Observe(t *testing.T) {
	t.Parallel()
	future := New(func() time.Time { return time.UnixMilli(1900000000000) }).Next()
	g := New(func() time.Time { return time.UnixMilli(1788215727072) })
	g.Observe(future)
	require.Greater(t, g.Next(), future)
	g.Observe("not-an-id")
}

func TestEncodeDecode(t *testing.T) {
	t.Parallel()
	for _, v := range [][2]uint64{{0, 0}, {1, 2}, {^uint64(0), ^uint64(0)}, {1 << 63, 12345}} {
		hi, lo, ok := decode(encode(v[0], v[1]))
		require.True(t, ok)
		require.Equal(t, v, [2]uint64{hi, lo})
	}
	_, _, ok := decode("zzzzzzzzzzzzzzzzzzzzzzzzz") // exceeds 128 bits
	require.False(t, ok)
}

// bigForm is the oracle of the ID form: the value in base 36 by math/big,
// zero-padded to 25 digits.
func bigForm(hi, lo uint64) string {
	v := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
	v.Or(v, new(big.Int).SetUint64(lo))
	s := v.Text(36)
	return strings.Repeat("0", Len-len(s)) + s
}

func TestEncode_MatchesBigInt(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	values := [][2]uint64{{0, 0}, {0, 35}, {0, 36}, {0, chunk - 1}, {0, chunk}, {^uint64(0), ^uint64(0)}, {^uint64(0), 0}, {1, 0}}
	for range 100000 {
		values = append(values, [2]uint64{r.Uint64() >> r.IntN(64), r.Uint64() >> r.IntN(64)})
	}
	for _, v := range values {
		want := bigForm(v[0], v[1])
		require.Equal(t, want, encode(v[0], v[1]), "%x %x", v[0], v[1])
		hi, lo, ok := decode(want)
		require.True(t, ok, want)
		require.Equal(t, v, [2]uint64{hi, lo}, want)
	}
}

func FuzzDecode_MatchesBigInt(f *testing.F) {
	for _, s := range []string{"0000000000000000000000000", "zzzzzzzzzzzzzzzzzzzzzzzzz", "f5lxx1zz5pnorynqglhzmsp33", "f5lxx1zz5pnorynqglhzmsp34", "0job000000000000000000001", "A000000000000000000000000", "00000000000000000000000!"} {
		f.Add(s)
	}
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	f.Fuzz(func(t *testing.T, s string) {
		hi, lo, ok := decode(s)
		v, parsed := new(big.Int).SetString(s, 36)
		valid := len(s) == Len && parsed && strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune(digits, r) }) < 0
		want := valid && v.Cmp(limit) < 0
		require.Equal(t, want, ok, "%q", s)
		if ok {
			require.Equal(t, s, bigForm(hi, lo))
		}
	})
}
