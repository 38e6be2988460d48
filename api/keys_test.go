package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeBudgetPatch_KeysRoundTrip: a client's keys, in both formats,
// come back as sent: a key's members set or null, a key's null, keys null.
func TestDecodeBudgetPatch_KeysRoundTrip(t *testing.T) {
	t.Parallel()
	requireRoundTrips(t, map[string]BudgetPatch{
		"Keys": {Keys: Set(map[string]Nullable[KeyPatch]{
			"acme":   Set(KeyPatch{Weight: Set[int64](3), Allocation: Set[int64](20)}),
			"globex": Set(KeyPatch{Weight: Null[int64]()}),
			"hooli":  Set(KeyPatch{}),
			"gone":   Null[KeyPatch](),
		})},
		"EmptyKeys": {Keys: Set(map[string]Nullable[KeyPatch]{})},
		"NoKeys":    {Keys: Null[map[string]Nullable[KeyPatch]]()},
	}, DecodeBudgetPatch)
}

func TestDecodeBudgetPatch_KeysErrors(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`{"keys":5}`:                           "invalid JSON: keys must be an object",
		`{"keys":{"a":[]}}`:                    "invalid JSON: keys.a must be an object",
		`{"keys":{"a":{"weight":"2"}}}`:        "invalid JSON: keys.a.weight must be an integer",
		`{"keys":{"a":{"allocation":0.5}}}`:    "invalid JSON: keys.a.allocation must be an integer",
		`{"keys":{"b":{"x":1},"a":{"y":1}}}`:   `unknown field "keys.a.y"`,
		`{"keys":{"a":{"weight":1,"z":null}}}`: `unknown field "keys.a.z"`,
	} {
		_, err := DecodeBudgetPatch(JSON, []byte(body))
		require.EqualError(t, err, want, body)
	}
}

// TestKeyOverrides_MsgPackSorted: overrides encode in MessagePack with
// their sub-keys sorted, as in JSON, whatever the map's order.
func TestKeyOverrides_MsgPackSorted(t *testing.T) {
	t.Parallel()
	keys := KeyOverrides{}
	for _, k := range []string{"m", "b", "z", "a", "k", "c", "y", "d"} {
		keys[k] = KeyOverride{Weight: 2}
	}
	want, err := Marshal(JSON, Budget{Keys: keys})
	require.NoError(t, err)
	for range 20 {
		b, err := Marshal(MsgPack, Budget{Keys: keys})
		require.NoError(t, err)
		js, err := msgpackToJSON(nil, b)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(js))
		require.Contains(t, string(js), `"keys":{"a":{"weight":2},"b":{"weight":2},"c":{"weight":2},"d":{"weight":2},"k"`)
	}
	b, err := Marshal(MsgPack, Budget{})
	require.NoError(t, err)
	js, err := msgpackToJSON(nil, b)
	require.NoError(t, err)
	require.NotContains(t, string(js), "keys", "none: left out")
}
