package api

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

var bodyFormats = []struct {
	name string
	f    Format
}{{"JSON", JSON}, {"MsgPack", MsgPack}}

func TestNullable(t *testing.T) {
	t.Parallel()
	old := u64(5)
	tests := []struct {
		name         string
		n            Nullable[uint64]
		zero, isNull bool
		value        uint64
		ok           bool
		merged       *uint64
	}{
		{"Absent", Nullable[uint64]{}, true, false, 0, false, old},
		{"Null", Null[uint64](), false, true, 0, false, nil},
		{"Set", Set[uint64](7), false, false, 7, true, u64(7)},
		{"SetZero", Set[uint64](0), false, false, 0, true, u64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.zero, tt.n.IsZero())
			require.Equal(t, tt.isNull, tt.n.IsNull())
			v, ok := tt.n.Get()
			require.Equal(t, tt.value, v)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.merged, tt.n.Merge(old))
		})
	}
	got := Set[uint64](1).Merge(old)
	*got = 9
	require.Equal(t, uint64(5), *old, "Merge returns a pointer of its own")
}

func TestJobPatch_MarshalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    any
		want string
	}{
		{"Empty", JobPatch{}, `{}`},
		{"Values", JobPatch{
			Queue: Ptr("q"), Priority: Ptr[uint16](0), ReadyAt: Set[uint64](0), RetryLimit: Set[uint32](3),
			Backoff:   Set(Backoff{Exponent: 1.5, BaseMs: 10, JitterMs: 0}),
			Retention: Set(RetentionPatch{CompletedMs: Set[uint64](0)}),
		}, `{"queue":"q","priority":0,"ready_at":0,"retry_limit":3,"backoff":{"exponent":1.5,"base_ms":10,"jitter_ms":0},"retention":{"completed_ms":0}}`},
		{"Nulls", JobPatch{ReadyAt: Null[uint64](), RetryLimit: Null[uint32](), Backoff: Null[Backoff](), Retention: Null[RetentionPatch]()},
			`{"ready_at":null,"retry_limit":null,"backoff":null,"retention":null}`},
		{"RetentionMembers", JobPatch{Retention: Set(RetentionPatch{CompletedMs: Null[uint64](), DeadMs: Set[uint64](1)})},
			`{"retention":{"completed_ms":null,"dead_ms":1}}`},
		{"BudgetEmpty", BudgetPatch{}, `{}`},
		{"BudgetStrategy", BudgetPatch{Allocation: Ptr[int64](2), Strategy: &StrategyPatch{Type: Ptr(StrategyTimeBased), DurationMs: Ptr[int64](60), Burst: Null[int64]()}},
			`{"allocation":2,"strategy":{"type":"time_based","duration_ms":60,"burst":null}}`},
		{"BudgetBurst", BudgetPatch{Strategy: &StrategyPatch{Burst: Set[int64](4)}}, `{"strategy":{"burst":4}}`},
		{"BudgetFamilyAndPause", BudgetPatch{
			PerKey: Set(TemplatePatch{Allocation: Ptr[int64](5), Strategy: &StrategyPatch{Type: Ptr(StrategyWhileInFlight)}}),
			Paused: Set(true), PausedUntil: Set[uint64](1788215727072),
		}, `{"per_key":{"allocation":5,"strategy":{"type":"while_in_flight"}},"paused":true,"paused_until":1788215727072}`},
		{"BudgetResume", BudgetPatch{PerKey: Null[TemplatePatch](), Paused: Set(false), PausedUntil: Null[uint64]()},
			`{"per_key":null,"paused":false,"paused_until":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Marshal(JSON, tt.p)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(b))
		})
	}
}

// TestJobPatch_MarshalMsgPack: absent members are left out of the map,
// null ones are there as nil.
func TestJobPatch_MarshalMsgPack(t *testing.T) {
	t.Parallel()
	b, err := Marshal(MsgPack, JobPatch{Priority: Ptr[uint16](3), RetryLimit: Null[uint32](), Retention: Set(RetentionPatch{DeadMs: Set[uint64](1)})})
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, msgpack.Unmarshal(b, &got))
	require.Equal(t, map[string]any{"priority": int8(3), "retry_limit": nil, "retention": map[string]any{"dead_ms": int8(1)}}, got)
}

// TestDecodeJobPatch_RoundTrip: what a client encodes, the server decodes
// into the same patch, in both formats.
func TestDecodeJobPatch_RoundTrip(t *testing.T) {
	t.Parallel()
	patches := map[string]JobPatch{
		"Empty":  {},
		"Values": {Queue: Ptr("a:b"), Priority: Ptr[uint16](65535), ReadyAt: Set[uint64](1 << 40), RetryLimit: Set[uint32](0), Backoff: Set(Backoff{Exponent: 0.25, BaseMs: 1, JitterMs: 4294967295}), Retention: Set(RetentionPatch{})},
		"Nulls":  {ReadyAt: Null[uint64](), RetryLimit: Null[uint32](), Backoff: Null[Backoff](), Retention: Null[RetentionPatch]()},
		"Mixed":  {Retention: Set(RetentionPatch{CompletedMs: Null[uint64](), DeadMs: Set[uint64](0)})},
	}
	requireRoundTrips(t, patches, DecodeJobPatch)
}

func TestDecodeBudgetPatch_RoundTrip(t *testing.T) {
	t.Parallel()
	patches := map[string]BudgetPatch{
		"Empty":         {},
		"Allocation":    {Allocation: Ptr[int64](-3)},
		"EmptyStrategy": {Strategy: &StrategyPatch{}},
		"Strategy":      {Strategy: &StrategyPatch{Type: Ptr(StrategyWhileInFlight), DurationMs: Ptr[int64](9), Burst: Set[int64](2)}},
		"NoBurst":       {Allocation: Ptr[int64](1), Strategy: &StrategyPatch{Burst: Null[int64]()}},
		"Family": {PerKey: Set(TemplatePatch{Allocation: Ptr[int64](2),
			Strategy: &StrategyPatch{Type: Ptr(StrategyTimeBased), DurationMs: Ptr[int64](1000), Burst: Null[int64]()}})},
		"EmptyTemplate": {PerKey: Set(TemplatePatch{})},
		"Plain":         {PerKey: Null[TemplatePatch]()},
		"Pause":         {Paused: Set(true), PausedUntil: Set[uint64](1 << 42)},
		"Resume":        {Paused: Null[bool](), PausedUntil: Null[uint64]()},
		"PausedFalse":   {Paused: Set(false)},
	}
	requireRoundTrips(t, patches, DecodeBudgetPatch)
}

// requireRoundTrips encodes each patch as a client does, in both formats,
// and requires decode to give it back.
func requireRoundTrips[P any](t *testing.T, patches map[string]P, decode func(Format, []byte) (P, error)) {
	t.Helper()
	for name, p := range patches {
		for _, bf := range bodyFormats {
			t.Run(name+"/"+bf.name, func(t *testing.T) {
				t.Parallel()
				b, err := Marshal(bf.f, p)
				require.NoError(t, err)
				got, err := decode(bf.f, b)
				require.NoError(t, err, "%s", b)
				require.Equal(t, p, got, "%s", b)
			})
		}
	}
}

func TestDecodeJobPatch_Ignored(t *testing.T) {
	t.Parallel()
	p, err := DecodeJobPatch(JSON, []byte(`{"type":"t","payload":{"a":1},"budgets":[{"key":"k","cost":1}],"priority":2}`))
	require.NoError(t, err, "a job as read can be sent back")
	require.Equal(t, JobPatch{Priority: Ptr[uint16](2)}, p)
}

// patchError is what a refused patch body must give: a *DecodeError (the
// server's 400) or a *FieldError (its 422), with the message.
type patchError struct {
	body  string
	field bool // *FieldError, else *DecodeError
	msg   string
}

func requirePatchError(t *testing.T, err error, want patchError) {
	t.Helper()
	if want.field {
		var fe *FieldError
		require.ErrorAs(t, err, &fe, want.body)
	} else {
		var de *DecodeError
		require.ErrorAs(t, err, &de, want.body)
	}
	require.EqualError(t, err, want.msg, want.body)
}

func TestDecodeJobPatch_Errors(t *testing.T) {
	t.Parallel()
	for _, tt := range []patchError{
		{`[]`, false, "invalid JSON: body must be a JSON object"},
		{`{"queue":`, false, "invalid JSON: unexpected end of JSON input"},
		{`{"queue":"a","zzz":1,"bogus":2}`, true, `unknown field "bogus"`},
		{`{"queue":null}`, true, "queue cannot be null"},
		{`{"priority":null}`, true, "priority cannot be null"},
		{`{"queue":1}`, false, "invalid JSON: queue must be a string"},
		{`{"priority":65536}`, false, "invalid JSON: priority must be an integer 0..65535"},
		{`{"ready_at":-1}`, false, "invalid JSON: ready_at must be a non-negative integer"},
		{`{"retry_limit":"x"}`, false, "invalid JSON: retry_limit must be an integer 0..4294967295"},
		{`{"backoff":1}`, false, "invalid JSON: backoff must be an object"},
		{`{"backoff":{"exponent":2,"base_ms":1,"x":0}}`, true, `unknown field "backoff.x"`},
		{`{"backoff":{"exponent":"2"}}`, false, "invalid JSON: backoff.exponent must be a number"},
		{`{"backoff":{"exponent":2,"base_ms":1}}`, false, "invalid JSON: missing field `jitter_ms`"},
		{`{"backoff":{"exponent":null,"base_ms":1,"jitter_ms":1}}`, false, "invalid JSON: missing field `exponent`"},
		{`{"retention":[]}`, false, "invalid JSON: retention must be an object"},
		{`{"retention":{"completed":1}}`, true, `unknown field "retention.completed"`},
		{`{"retention":{"dead_ms":1.5}}`, false, "invalid JSON: retention.dead_ms must be a non-negative integer"},
	} {
		_, err := DecodeJobPatch(JSON, []byte(tt.body))
		requirePatchError(t, err, tt)
	}
	_, err := DecodeJobPatch(MsgPack, []byte{0x92, 0x01, 0x02})
	requirePatchError(t, err, patchError{"msgpack array", false, "invalid MessagePack: body must be a map"})
	_, err = DecodeJobPatch(MsgPack, mp([]byte{0x81}, "queue", []byte{0x01}))
	requirePatchError(t, err, patchError{"msgpack queue 1", false, "invalid MessagePack: queue must be a string"})
}

func TestDecodeBudgetPatch_Errors(t *testing.T) {
	t.Parallel()
	for _, tt := range []patchError{
		{`"x"`, false, "invalid JSON: body must be a JSON object"},
		{`{"allocation":1,"Allocation":2}`, true, `unknown field "Allocation"`},
		{`{"allocation":null}`, true, "allocation cannot be null"},
		{`{"allocation":"1"}`, false, "invalid JSON: allocation must be an integer"},
		{`{"strategy":null}`, true, "strategy cannot be null"},
		{`{"strategy":5}`, false, "invalid JSON: strategy must be an object"},
		{`{"strategy":{"kind":"x"}}`, true, `unknown field "strategy.kind"`},
		{`{"strategy":{"type":null}}`, true, "strategy.type cannot be null"},
		{`{"strategy":{"duration_ms":null}}`, true, "strategy.duration_ms cannot be null"},
		{`{"strategy":{"type":"fixed_window"}}`, false, "invalid JSON: unknown variant `fixed_window`, expected `while_in_flight`, `time_based` or `calendar`"},
		{`{"strategy":{"duration_ms":1.5}}`, false, "invalid JSON: strategy.duration_ms must be an integer"},
		{`{"strategy":{"burst":true}}`, false, "invalid JSON: strategy.burst must be an integer"},
		{`{"per_key":5}`, false, "invalid JSON: per_key must be an object"},
		{`{"per_key":{"per_key":{}}}`, true, `unknown field "per_key.per_key"`},
		{`{"per_key":{"allocation":null}}`, true, "per_key.allocation cannot be null"},
		{`{"per_key":{"allocation":"1"}}`, false, "invalid JSON: per_key.allocation must be an integer"},
		{`{"per_key":{"strategy":null}}`, true, "per_key.strategy cannot be null"},
		{`{"per_key":{"strategy":{"type":null}}}`, true, "per_key.strategy.type cannot be null"},
		{`{"per_key":{"strategy":{"type":"x"}}}`, false, "invalid JSON: unknown variant `x`, expected `while_in_flight`, `time_based` or `calendar`"},
		{`{"per_key":{"strategy":{"burst":"x"}}}`, false, "invalid JSON: per_key.strategy.burst must be an integer"},
		{`{"paused":"yes"}`, false, "invalid JSON: paused must be true or false"},
		{`{"paused":1}`, false, "invalid JSON: paused must be true or false"},
		{`{"paused_until":-1}`, false, "invalid JSON: paused_until must be a non-negative integer"},
		{`{"paused_until":"soon"}`, false, "invalid JSON: paused_until must be a non-negative integer"},
		{`{"paused_until":1.5}`, false, "invalid JSON: paused_until must be a non-negative integer"},
	} {
		_, err := DecodeBudgetPatch(JSON, []byte(tt.body))
		requirePatchError(t, err, tt)
	}
	p, err := DecodeBudgetPatch(JSON, []byte(`{"key":"ignored","allocation":3}`))
	require.NoError(t, err)
	require.Equal(t, BudgetPatch{Allocation: Ptr[int64](3)}, p)
}

func TestBackoffRequest_Complete(t *testing.T) {
	t.Parallel()
	e, n := Ptr[float32](2), Ptr[uint32](1)
	for _, tt := range []struct {
		in      BackoffRequest
		missing string
	}{
		{BackoffRequest{}, "exponent"},
		{BackoffRequest{Exponent: e}, "base_ms"},
		{BackoffRequest{Exponent: e, BaseMs: n}, "jitter_ms"},
		{BackoffRequest{BaseMs: n, JitterMs: n}, "exponent"},
	} {
		_, missing := tt.in.Complete()
		require.Equal(t, tt.missing, missing)
	}
	b, missing := BackoffRequest{Exponent: e, BaseMs: n, JitterMs: Ptr[uint32](3)}.Complete()
	require.Empty(t, missing)
	require.Equal(t, Backoff{Exponent: 2, BaseMs: 1, JitterMs: 3}, b)
}

// FuzzDecodePatch: a body either decodes or is refused with a
// *DecodeError or *FieldError; what decodes, encoded again by a client in
// either format, decodes into the same patch.
func FuzzDecodePatch(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"queue":"q","priority":1,"ready_at":null,"retry_limit":2,"backoff":{"exponent":1.5,"base_ms":1,"jitter_ms":2},"retention":{"dead_ms":null}}`,
		`{"retention":null,"backoff":null,"type":"x","payload":[1]}`, `{"allocation":1,"strategy":{"type":"time_based","duration_ms":5,"burst":null}}`,
		`{"strategy":{}}`, `{"queue":null}`, `[]`, `{"backoff":{"exponent":1e39,"base_ms":1,"jitter_ms":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		refused := func(err error) {
			var de *DecodeError
			var fe *FieldError
			require.True(t, errors.As(err, &de) || errors.As(err, &fe), "%T %v", err, err)
		}
		if p, err := DecodeJobPatch(JSON, body); err == nil {
			requireRoundTrips(t, map[string]JobPatch{"Job": p}, DecodeJobPatch)
		} else {
			refused(err)
		}
		if p, err := DecodeBudgetPatch(JSON, body); err == nil {
			requireRoundTrips(t, map[string]BudgetPatch{"Budget": p}, DecodeBudgetPatch)
		} else {
			refused(err)
		}
	})
}
