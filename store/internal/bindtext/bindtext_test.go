package bindtext

import (
	"testing"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

func TestDecodeBindings(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		in   string
		want []store.Binding
		fast bool // read without the JSON decoder
	}{
		"One":           {`[{"key":"api-eu","cost":2}]`, []store.Binding{{Key: "api-eu", Cost: 2}}, true},
		"Two":           {`[{"key":"a","cost":1},{"key":"b","cost":-9223372036854775808}]`, []store.Binding{{Key: "a", Cost: 1}, {Key: "b", Cost: -9223372036854775808}}, true},
		"Escaped":       {`[{"key":"a\"b\u003c","cost":1}]`, []store.Binding{{Key: `a"b<`, Cost: 1}}, false},
		"RoundOne":      {`[{"key":"a,b}{","cost":3}]`, []store.Binding{{Key: "a,b}{", Cost: 3}}, true},
		"Spaces":        {`[ {"key": "a", "cost": 1} ]`, []store.Binding{{Key: "a", Cost: 1}}, false},
		"OtherOrder":    {`[{"cost":1,"key":"a"}]`, []store.Binding{{Key: "a", Cost: 1}}, false},
		"Empty":         {`[]`, nil, false},
		"PlusCost":      {`[{"key":"a","cost":+1}]`, nil, false},
		"TrailingComma": {`[{"key":"a","cost":1},]`, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, fast := parseFast(tc.in)
			require.Equal(t, tc.fast, fast)
			got, err := Decode(tc.in)
			if tc.want == nil && name != "Empty" {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// FuzzBindings checks that whatever encodeBindings writes decodes to what
// it was, and that the hand-written reader never disagrees with the JSON
// decoder on what it accepts.
func FuzzBindings(f *testing.F) {
	f.Add("api-eu", int64(2), "hourly", int64(1), `[{"key":"a","cost":1}]`)
	f.Add(`a"b\c`, int64(-1), "é<&>,}{", int64(0), `[{"key":"a","cost":01}]`)
	f.Fuzz(func(t *testing.T, k1 string, c1 int64, k2 string, c2 int64, raw string) {
		bs := []store.Binding{{Key: k1, Cost: c1}, {Key: k2, Cost: c2}}
		got, err := Decode(Encode(bs))
		require.NoError(t, err, "invalid UTF-8 becomes U+FFFD: encoding never fails")
		if utf8.ValidString(k1) && utf8.ValidString(k2) {
			require.Equal(t, bs, got)
		}

		if fast, ok := parseFast(raw); ok {
			var in []binding
			require.NoError(t, jsonv2.Unmarshal([]byte(raw), &in), "%q", raw)
			require.Len(t, fast, len(in))
			for i := range in {
				require.Equal(t, store.Binding(in[i]), fast[i])
			}
		}
	})
}
