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

func TestReorderCanonical(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string // want "": the general path's
	}{
		{`{"t":2,"i":1,"pad":"xx"}`, `{"i":1,"pad":"xx","t":2}`},
		{` { "b" : [ 1 , { "d" : 1, "c" : 2 } ] ,"a":{}} `, `{"a":{},"b":[1,{"c":2,"d":1}]}`},
		{`{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		{"[\n\ttrue ,null,\"é\"\r]", `[true,null,"é"]`},
		{`{"b":1,"a":2,"b":3}`, ""}, // duplicate
		{`{"a":1,"a":2}`, ""},
		{`{"b":"x\ny","a":1}`, ""}, // escape
		{`{"b":1.5,"a":1}`, ""},    // not an integer
		{`{"b":1,"a":1}x`, ""},
		{`{"b":1,"a":1,}`, ""},
		{`{"b" 1}`, ""},
	} {
		got, ok := reorderCanonical([]byte(tc.in))
		require.Equal(t, tc.want != "", ok, "%s", tc.in)
		if ok {
			require.Equal(t, tc.want, string(got), "%s", tc.in)
		}
	}
}

// FuzzReorderCanonical: whatever the reordering path accepts, the general
// path (a decode into Go values and an encode) produces byte for byte.
func FuzzReorderCanonical(f *testing.F) {
	for _, s := range []string{`{"t":2,"i":1,"pad":"xx"}`, ` {"b": [1, {"d":1,"c":2}], "a": {}} `, `{"b":1,"a":2,"b":3}`, `[ "é" , -0 ]`, `{"ab":1,"a":2,"":3}`, `{"a":{"c":1,"b":{"e":1,"d":2}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := reorderCanonical(data)
		if !ok {
			return
		}
		slow, err := canonicalize(data)
		require.NoError(t, err, "the reordering path accepted invalid JSON %q", data)
		require.Equal(t, string(slow), string(got))
	})
}

// BenchmarkCanonicalJSON: a payload as clients write it (fields in their
// own order) through CanonicalJSON, and through the general path.
func BenchmarkCanonicalJSON(b *testing.B) {
	in := []byte(`{"user_id":123456,"email":"user@example.com","template":"welcome","locale":"en","sent_at":1700000000000}`)
	b.Run("CanonicalJSON", func(b *testing.B) {
		for range b.N {
			_, _ = CanonicalJSON(in)
		}
	})
	b.Run("general", func(b *testing.B) {
		for range b.N {
			_, _ = canonicalize(in)
		}
	})
}
