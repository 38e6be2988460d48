package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIsCanonical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{}`, true},
		{`[]`, true},
		{`{"a":1,"b":[true,false,null,"x"],"c":{"d":-12}}`, true},
		{`"héllo"`, true},
		{`123456789012345678`, true},
		{`1234567890123456789`, false}, // may not fit int64: general path
		{`{"b":1,"a":2}`, false},       // unsorted
		{`{"a":1,"a":2}`, false},       // duplicate
		{`{"a": 1}`, false},            // whitespace
		{`"a\nb"`, false},              // escape
		{`1.5`, false},
		{`1e3`, false},
		{`-0`, true},
		{`01`, false},
		{`"\u2028"`, false},
		{"\"\u2028\"", false},
		{`[1,]`, false},
		{`{"a":1}x`, false},
		{`tru`, false},
		{``, false},
	} {
		require.Equal(t, tc.want, isCanonical([]byte(tc.in)), "%s", tc.in)
	}
}

// FuzzCanonicalFastPath: whatever the fast path accepts, the general path
// produces byte for byte.
func FuzzCanonicalFastPath(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,2,{"c":"d"}]}`, `"x"`, `-0`, `[true,null]`, `{"a":{"b":{}}}`, `"é"`, `9`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !isCanonical(data) {
			return
		}
		slow, err := canonicalize(data)
		require.NoError(t, err, "the fast path accepted invalid JSON %q", data)
		require.Equal(t, string(slow), string(data))
	})
}
