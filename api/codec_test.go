package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

func TestResponseFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		accept string
		want   Format
		ok     bool
	}{
		{"", JSON, true},
		{"application/json", JSON, true},
		{"application/msgpack", MsgPack, true},
		{"application/json, application/msgpack", MsgPack, true},
		{"application/msgpack;q=0.1, application/json", MsgPack, true},
		{"*/*", JSON, true},
		{"text/html, */*;q=0.8", JSON, true},
		{"Application/JSON", JSON, true},
		{"text/html", JSON, false},
		{"application/*", JSON, false},
		{"application/x-ndjson", JSON, false},
	}
	for _, tt := range tests {
		got, ok := ResponseFormat(tt.accept)
		require.Equal(t, tt.ok, ok, tt.accept)
		require.Equal(t, tt.want, got, tt.accept)
	}
}

func TestRequestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		contentType string
		want        Format
		ok          bool
	}{
		{"", JSON, true},
		{"application/json", JSON, true},
		{"application/json; charset=utf-8", JSON, true},
		{"application/msgpack", MsgPack, true},
		{"APPLICATION/MSGPACK", MsgPack, true},
		{"text/plain", JSON, false},
		{"*/*", JSON, false},
		{"application/x-www-form-urlencoded", JSON, false},
	}
	for _, tt := range tests {
		got, ok := RequestFormat(tt.contentType)
		require.Equal(t, tt.ok, ok, tt.contentType)
		require.Equal(t, tt.want, got, tt.contentType)
	}
}

func TestTakeFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		accept string
		want   StreamFormat
		ok     bool
	}{
		{"", NDJSON, true},
		{"application/x-ndjson", NDJSON, true},
		{"application/json", NDJSON, true},
		{"*/*", NDJSON, true},
		{"text/event-stream", SSE, true},
		{"application/vnd.zizq.msgpack-stream", MsgPackStream, true},
		{"application/msgpack", MsgPackStream, true},
		{"application/x-ndjson, text/event-stream", SSE, true},
		{"application/json, application/msgpack", MsgPackStream, true},
		{"text/html", NDJSON, false},
		{"application/*", NDJSON, false},
	}
	for _, tt := range tests {
		got, ok := TakeFormat(tt.accept)
		require.Equal(t, tt.ok, ok, tt.accept)
		require.Equal(t, tt.want, got, tt.accept)
	}
}

func TestContentTypes(t *testing.T) {
	t.Parallel()
	require.Equal(t, "application/json", ContentType(JSON))
	require.Equal(t, "application/msgpack", ContentType(MsgPack))
	require.Equal(t, "application/x-ndjson", StreamContentType(NDJSON))
	require.Equal(t, "application/vnd.zizq.msgpack-stream", StreamContentType(MsgPackStream))
	require.Equal(t, "text/event-stream", StreamContentType(SSE))
	require.Equal(t, []string{"application/json", "application/msgpack"}, SupportedFormats)
	require.Equal(t, []string{"text/event-stream", "application/x-ndjson", "application/vnd.zizq.msgpack-stream"}, SupportedStreamFormats)
}

func TestHeartbeat(t *testing.T) {
	t.Parallel()
	require.Equal(t, []byte("\n"), Heartbeat(NDJSON))
	require.Equal(t, []byte{0, 0, 0, 0}, Heartbeat(MsgPackStream))
	require.Equal(t, []byte(": heartbeat\n\n"), Heartbeat(SSE))
}

// mp builds expected MessagePack bytes: strings become fixstr, byte slices
// are copied as they are.
func mp(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b = append(append(b, 0xa0|byte(len(p))), p...)
		case []byte:
			b = append(b, p...)
		case int:
			b = append(b, byte(p))
		default:
			panic(p)
		}
	}
	return b
}

func TestMarshal_JSONExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			name: "JobOmitsUnsetFields",
			v:    Job{ID: id1, Type: "send<email>&co", Queue: "q", Priority: 32768, Status: "ready", ReadyAt: 1700000000000},
			want: `{"id":"036z951mhjikzik2gsl81gr7l","type":"send<email>&co","queue":"q","priority":32768,"status":"ready","ready_at":1700000000000,"attempts":0}`,
		},
		{
			name: "JobWithEverything",
			v: Job{
				ID: id1, Type: "t", Queue: "q", Priority: 1, Status: "dead",
				Payload: Payload(`{"a":[1,2.5,null],"b":"x"}`), ReadyAt: 5, Attempts: 2,
				RetryLimit: Ptr[uint32](1), Backoff: &Backoff{Exponent: 1.5, BaseMs: 10, JitterMs: 0},
				DequeuedAt: 6, FailedAt: 7, Retention: &Retention{DeadMs: Ptr[uint64](100)}, PurgeAt: 107,
				Duplicate: Ptr(false), Folded: Ptr(true), Batch: &Batch{Key: "b", When: "true", Fold: "$existing + $new"},
				Budgets: []Binding{{Key: "k", Cost: 2}},
			},
			want: `{"id":"036z951mhjikzik2gsl81gr7l","type":"t","queue":"q","priority":1,"status":"dead",` +
				`"payload":{"a":[1,2.5,null],"b":"x"},"ready_at":5,"attempts":2,"retry_limit":1,` +
				`"backoff":{"exponent":1.5,"base_ms":10,"jitter_ms":0},"dequeued_at":6,"failed_at":7,` +
				`"retention":{"dead_ms":100},"purge_at":107,"duplicate":false,"folded":true,` +
				`"batch":{"key":"b","when":"true","fold":"$existing + $new"},"budgets":[{"key":"k","cost":2}]}`,
		},
		{
			name: "NullPayload",
			v:    Job{ID: "j", Payload: Payload("null")},
			want: `{"id":"j","type":"","queue":"","priority":0,"status":"","payload":null,"ready_at":0,"attempts":0}`,
		},
		{
			name: "PagesKeepNulls",
			v:    JobList{Jobs: []Job{}, Pages: Pages{Self: "/jobs?order=asc&limit=50"}},
			want: `{"jobs":[],"pages":{"self":"/jobs?order=asc&limit=50","next":null,"prev":null}}`,
		},
		{
			name: "BudgetKeepsZizqShape",
			v:    Budget{Key: "k", Allocation: 3, Strategy: Strategy{Type: StrategyWhileInFlight}, CreatedAt: 1, UpdatedAt: 2},
			want: `{"key":"k","allocation":3,"strategy":{"type":"while_in_flight"},"created_at":1,"updated_at":2}`,
		},
		{
			name: "BudgetFamilyPaused",
			v: Budget{Key: "k", Allocation: 3, Strategy: Strategy{Type: StrategyWhileInFlight},
				PerKey: &BudgetTemplate{Allocation: 1, Strategy: Strategy{Type: StrategyTimeBased, DurationMs: 1000}},
				Paused: true, PausedUntil: 9, CreatedAt: 1, UpdatedAt: 2},
			want: `{"key":"k","allocation":3,"strategy":{"type":"while_in_flight"},` +
				`"per_key":{"allocation":1,"strategy":{"type":"time_based","duration_ms":1000}},"paused":true,"paused_until":9,"created_at":1,"updated_at":2}`,
		},
		{
			name: "ForecastKeepsNull",
			v:    Forecast{Key: "k", Parked: 2},
			want: `{"key":"k","parked":2,"drains_at":null,"estimated":false}`,
		},
		{
			name: "ErrorWithSupported",
			v:    Error{Error: "not acceptable", Supported: SupportedFormats},
			want: `{"error":"not acceptable","supported":["application/json","application/msgpack"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Marshal(JSON, tt.v)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(b))
		})
	}
}

func TestMarshal_MsgPackExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want []byte
	}{
		{
			name: "JobOmitsUnsetFieldsAndCompactsInts",
			v:    Job{ID: "j", Type: "t", Queue: "q", Priority: 32768, Status: "ready", ReadyAt: 1, Attempts: 0},
			want: mp(0x87, "id", "j", "type", "t", "queue", "q", "priority", []byte{0xcd, 0x80, 0x00},
				"status", "ready", "ready_at", 1, "attempts", 0),
		},
		{
			name: "Float32StaysFloat32",
			v:    Backoff{Exponent: 4, BaseMs: 1, JitterMs: 300},
			want: mp(0x83, "exponent", []byte{0xca, 0x40, 0x80, 0x00, 0x00}, "base_ms", 1, "jitter_ms", []byte{0xcd, 0x01, 0x2c}),
		},
		{
			name: "NilPointersWithoutOmitemptyAreNil",
			v:    Pages{Self: "/x"},
			want: mp(0x83, "self", "/x", "next", 0xc0, "prev", 0xc0),
		},
		{
			name: "BudgetExtensionsOmittedUnlessSet",
			v:    Budget{Key: "k", Allocation: 1, Strategy: Strategy{Type: "w"}, PausedUntil: 7, CreatedAt: 1, UpdatedAt: 2},
			want: mp(0x86, "key", "k", "allocation", 1, "strategy", 0x81, "type", "w", "paused_until", 7,
				"created_at", 1, "updated_at", 2),
		},
		{
			name: "ForecastDrainsAtNil",
			v:    Forecast{Key: "k", Parked: 1, Estimated: true},
			want: mp(0x84, "key", "k", "parked", 1, "drains_at", 0xc0, "estimated", 0xc3),
		},
		{
			name: "PayloadIsNative",
			v:    Job{ID: "j", Payload: Payload(`{"n":-1,"b":true,"s":"x","f":1.0,"a":[null]}`)},
			want: mp(0x88, "id", "j", "type", "", "queue", "", "priority", 0, "status", "",
				"payload", 0x85, "a", 0x91, 0xc0, "b", 0xc3, "f", []byte{0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, "n", 0xff, "s", "x",
				"ready_at", 0, "attempts", 0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Marshal(MsgPack, tt.v)
			require.NoError(t, err)
			require.Equal(t, tt.want, b)
		})
	}
}

// trickyPayload has unsorted keys, integers at both ends of 64 bits, floats,
// nested arrays, escapes and null.
const trickyPayload = `{"z":1, "a":{"y":[1,[2,[3,[]]]],"b":null},
	"big":18446744073709551615,"min":-9223372036854775808,"max":9223372036854775807,
	"f":2.5,"e":1e300,"one":1.0,"neg":-0.125,"s":"line\nbreak \"q\" <&> é \u2028 \ud83d\ude00",
	"t":true,"n":null,"arr":[{"k":"v"},[],{}]}`

const trickyCanonical = `{"a":{"b":null,"y":[1,[2,[3,[]]]]},"arr":[{"k":"v"},[],{}],` +
	`"big":18446744073709551615,"e":1e300,"f":2.5,"max":9223372036854775807,"min":-9223372036854775808,` +
	`"n":null,"neg":-0.125,"one":1.0,"s":"line\nbreak \"q\" <&> é \u2028 😀","t":true,"z":1}`

func trickyJob(t *testing.T) Job {
	t.Helper()
	var p Payload
	require.NoError(t, json.Unmarshal([]byte(trickyPayload), &p))
	require.Equal(t, trickyCanonical, string(p))
	return Job{
		ID: id1, Type: "t", Queue: "q", Priority: 65535, Status: "in_flight", Payload: p,
		ReadyAt: math.MaxUint64, Attempts: math.MaxUint32, RetryLimit: Ptr[uint32](0),
		Backoff:    &Backoff{Exponent: 0.1, BaseMs: math.MaxUint32, JitterMs: 1},
		DequeuedAt: 1, Retention: &Retention{CompletedMs: Ptr[uint64](0)},
		Budgets: []Binding{{Key: "a", Cost: math.MaxInt64}, {Key: "b", Cost: math.MinInt64}},
	}
}

func TestMarshal_RoundTripJob(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{JSON, MsgPack} {
		job := trickyJob(t)
		b, err := Marshal(f, job)
		require.NoError(t, err)
		var got Job
		require.NoError(t, Unmarshal(f, b, &got))
		require.Equal(t, job, got, "format %d", f)
		require.Equal(t, trickyCanonical, string(got.Payload))
	}
}

func TestPayload_EncodeMsgpackNativeValues(t *testing.T) {
	t.Parallel()
	b, err := Marshal(MsgPack, trickyJob(t).Payload)
	require.NoError(t, err)

	// Keys come out sorted.
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	n, err := dec.DecodeMapLen()
	require.NoError(t, err)
	var keys []string
	for range n {
		k, err := dec.DecodeString()
		require.NoError(t, err)
		keys = append(keys, k)
		require.NoError(t, dec.Skip())
	}
	require.Equal(t, []string{"a", "arr", "big", "e", "f", "max", "min", "n", "neg", "one", "s", "t", "z"}, keys)

	var m map[string]any
	require.NoError(t, msgpack.Unmarshal(b, &m))
	require.Equal(t, uint64(math.MaxUint64), m["big"])
	require.Equal(t, int64(math.MinInt64), m["min"])
	require.Equal(t, uint64(math.MaxInt64), m["max"]) // the decoder reads positive ints as uint64
	require.Equal(t, 1e300, m["e"])
	require.Equal(t, 2.5, m["f"])
	require.Equal(t, 1.0, m["one"])
	require.Equal(t, -0.125, m["neg"])
	require.Equal(t, int8(1), m["z"])
	require.Equal(t, true, m["t"])
	require.Nil(t, m["n"])
	require.Equal(t, "line\nbreak \"q\" <&> é \u2028 😀", m["s"])
	require.Equal(t, map[string]any{"b": nil, "y": []any{int8(1), []any{int8(2), []any{int8(3), []any{}}}}}, m["a"])
}

func TestPayload_EncodeMsgpackScalars(t *testing.T) {
	t.Parallel()
	tests := []struct {
		payload string
		want    []byte
	}{
		{"", []byte{0xc0}},
		{"null", []byte{0xc0}},
		{"true", []byte{0xc3}},
		{"0", []byte{0x00}},
		{"-1", []byte{0xff}},
		{"-33", []byte{0xd0, 0xdf}},
		{"200", []byte{0xcc, 0xc8}},
		{"-0", []byte{0x00}},
		{"123456789012345678", []byte{0xcf, 0x01, 0xb6, 0x9b, 0x4b, 0xa6, 0x30, 0xf3, 0x4e}},
		{"1E2", []byte{0xcb, 0x40, 0x59, 0, 0, 0, 0, 0, 0}},
		{`"é"`, []byte{0xa2, 0xc3, 0xa9}},
		{`"\u00e9"`, []byte{0xa2, 0xc3, 0xa9}},
		{" [ 1 , {} ] ", []byte{0x92, 0x01, 0x80}},
		{`{"b":1,"a":2,"b":3}`, []byte{0x83, 0xa1, 'a', 0x02, 0xa1, 'b', 0x01, 0xa1, 'b', 0x03}},
		{`{"\u0062":1,"a":2}`, []byte{0x82, 0xa1, 'a', 0x02, 0xa1, 'b', 0x01}},
		{`"` + strings.Repeat("x", 40) + `"`, append([]byte{0xd9, 40}, strings.Repeat("x", 40)...)},
		{`"` + strings.Repeat("x", 300) + `"`, append([]byte{0xda, 0x01, 0x2c}, strings.Repeat("x", 300)...)},
	}
	for _, tt := range tests {
		b, err := Marshal(MsgPack, Payload(tt.payload))
		require.NoError(t, err, tt.payload)
		require.Equal(t, tt.want, b, tt.payload)
	}
}

func TestPayload_EncodeMsgpackInvalid(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"{", "[1,]", `{"a"}`, `{1:2}`, "nul", `"x`, "1 2", "--1", "\"\x01\"", `"\x"`} {
		_, err := Marshal(MsgPack, Payload(p))
		require.ErrorContains(t, err, "encode payload", p)
	}
}

func TestPayload_DecodeMsgpack(t *testing.T) {
	t.Parallel()
	raw := mp(0x83, "z", 0x01, "a", []byte{0xca, 0x3d, 0xcc, 0xcc, 0xcd}, "m", 0x92, 0xc0, []byte{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	var p Payload
	require.NoError(t, msgpack.Unmarshal(raw, &p))
	require.Equal(t, `{"a":0.1,"m":[null,18446744073709551615],"z":1}`, string(p))

	require.Error(t, msgpack.Unmarshal([]byte{0xc4, 0x01, 0x00}, &p))
}

func TestUnmarshal_EnqueueRequestPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		json    string
		msgpack []byte
		want    Payload
	}{
		{"Absent", `{"type":"t"}`, mp(0x81, "type", "t"), nil},
		{"Null", `{"type":"t","payload":null}`, mp(0x82, "type", "t", "payload", 0xc0), Payload("null")},
		{"Object", `{"payload":{"b":1,"a":[true]}}`, mp(0x81, "payload", 0x82, "b", 0x01, "a", 0x91, 0xc3), Payload(`{"a":[true],"b":1}`)},
		{"Scalar", `{"payload":"hi"}`, mp(0x81, "payload", "hi"), Payload(`"hi"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fromJSON, fromMsgPack EnqueueRequest
			require.NoError(t, Unmarshal(JSON, []byte(tt.json), &fromJSON))
			require.NoError(t, Unmarshal(MsgPack, tt.msgpack, &fromMsgPack))
			require.Equal(t, tt.want, fromJSON.Payload)
			require.Equal(t, tt.want, fromMsgPack.Payload)
			for _, f := range []Format{JSON, MsgPack} {
				b, err := Marshal(f, fromJSON)
				require.NoError(t, err)
				var back EnqueueRequest
				require.NoError(t, Unmarshal(f, b, &back))
				require.Equal(t, fromJSON, back)
			}
		})
	}
}

func TestUnmarshal_EnqueueRequestRoundTrip(t *testing.T) {
	t.Parallel()
	req := EnqueueRequest{
		Type: Ptr("send"), Queue: Ptr("emails"), Payload: Payload(`{"to":"a@b.c"}`),
		Priority: Ptr[uint16](65535), ReadyAt: Ptr[uint64](math.MaxUint64), RetryLimit: Ptr[uint32](0),
		Backoff:   &BackoffRequest{Exponent: Ptr[float32](4), BaseMs: Ptr[uint32](1), JitterMs: Ptr[uint32](0)},
		Retention: &Retention{CompletedMs: Ptr[uint64](10)},
		UniqueKey: Ptr("u"), UniqueWhile: Ptr("active"),
		Batch: &BatchRequest{Key: Ptr("k"), When: Ptr("true"), Fold: Ptr("$new")},
		Budgets: []BindingRequest{{Key: Ptr("b"), Cost: Ptr[int64](-3),
			CreateWith: &BudgetInput{Allocation: Ptr[int64](5), Strategy: &StrategyInput{Type: Ptr("time_based"), DurationMs: Ptr[int64](1000), Burst: Ptr[int64](2)}}}},
	}
	for _, f := range []Format{JSON, MsgPack} {
		b, err := Marshal(f, req)
		require.NoError(t, err)
		var got EnqueueRequest
		require.NoError(t, Unmarshal(f, b, &got))
		require.Equal(t, req, got, "format %d", f)
	}
}

func TestUnmarshal_Errors(t *testing.T) {
	t.Parallel()
	f64 := func(f float64) []byte { return binary.BigEndian.AppendUint64([]byte{0xcb}, math.Float64bits(f)) }
	deep := append(bytes.Repeat([]byte{0x91}, 10001), 0xc0)
	tests := []struct {
		name   string
		format Format
		data   []byte
		want   string
	}{
		{"JSONEmpty", JSON, nil, "invalid JSON: empty body"},
		{"JSONBlank", JSON, []byte(" \n"), "invalid JSON: empty body"},
		{"JSONTrailing", JSON, []byte(`{"type":"t"} {}`), "invalid JSON: invalid character '{' after top-level value"},
		{"JSONTruncated", JSON, []byte(`{"type":`), "invalid JSON: unexpected end of JSON input"},
		{"JSONSyntax", JSON, []byte(`{type:1}`), "invalid JSON: invalid character 't' looking for beginning of object key string"},
		{"JSONPriorityOverflow", JSON, []byte(`{"priority":70000}`), "invalid JSON: priority: cannot unmarshal number 70000 into uint16"},
		{"JSONPriorityNegative", JSON, []byte(`{"priority":-1}`), "invalid JSON: priority: cannot unmarshal number -1 into uint16"},
		{"JSONWrongType", JSON, []byte(`{"type":5}`), "invalid JSON: type: cannot unmarshal number into string"},
		{"JSONWrongObject", JSON, []byte(`{"backoff":[1]}`), "invalid JSON: backoff: cannot unmarshal array into object"},
		{"JSONNotObject", JSON, []byte(`[1]`), "invalid JSON: cannot unmarshal array into object"},
		{"JSONNestedField", JSON, []byte(`{"budgets":[{"cost":1.5}]}`), "invalid JSON: budgets.0.cost: cannot unmarshal number 1.5 into int64"},
		{"JSONBadUTF8", JSON, []byte("{\"type\":\"a\xff\"}"), "invalid JSON: invalid UTF-8"},
		{"JSONBadUTF8InPayload", JSON, []byte("{\"payload\":[\"\xc3\"]}"), "invalid JSON: invalid UTF-8"},
		{"MsgPackEmpty", MsgPack, nil, "invalid MessagePack: empty body"},
		{"MsgPackTrailing", MsgPack, mp(0x80, 0xc0), "invalid MessagePack: 1 bytes of trailing data after the value"},
		{"MsgPackTruncatedMap", MsgPack, mp(0x82, "type", "t"), "invalid MessagePack: unexpected end of data"},
		{"MsgPackTruncatedString", MsgPack, mp(0x81, "type", []byte{0xd9, 0x05, 'a'}), "invalid MessagePack: unexpected end of data"},
		{"MsgPackHugeArray", MsgPack, []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, "invalid MessagePack: unexpected end of data"},
		{"MsgPackHugeMap", MsgPack, []byte{0xdf, 0x7f, 0xff, 0xff, 0xff, 0x00}, "invalid MessagePack: unexpected end of data"},
		{"MsgPackHugeString", MsgPack, []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 0x00}, "invalid MessagePack: unexpected end of data"},
		{"MsgPackPriorityOverflow", MsgPack, mp(0x81, "priority", []byte{0xce, 0x00, 0x01, 0x11, 0x70}), "invalid MessagePack: priority: cannot unmarshal number 70000 into uint16"},
		{"MsgPackPriorityNegative", MsgPack, mp(0x81, "priority", 0xff), "invalid MessagePack: priority: cannot unmarshal number -1 into uint16"},
		{"MsgPackPriorityFloat", MsgPack, mp(0x81, "priority", f64(5)), "invalid MessagePack: priority: cannot unmarshal number 5.0 into uint16"},
		{"MsgPackWrongType", MsgPack, mp(0x81, "type", 0x05), "invalid MessagePack: type: cannot unmarshal number into string"},
		{"MsgPackNotMap", MsgPack, mp(0x91, 0x01), "invalid MessagePack: cannot unmarshal array into object"},
		{"MsgPackIntKey", MsgPack, mp(0x81, 0x01, 0x02), "invalid MessagePack: map keys must be strings"},
		{"MsgPackBinKey", MsgPack, mp(0x81, []byte{0xc4, 0x01, 'a'}, 0x02), "invalid MessagePack: map keys must be strings"},
		{"MsgPackBin", MsgPack, mp(0x81, "payload", []byte{0xc4, 0x01, 0x00}), "invalid MessagePack: binary data is not supported"},
		{"MsgPackExt", MsgPack, mp(0x81, "payload", []byte{0xd4, 0x01, 0x00}), "invalid MessagePack: extension types are not supported"},
		{"MsgPackTimestamp", MsgPack, []byte{0xd6, 0xff, 0, 0, 0, 1}, "invalid MessagePack: extension types are not supported"},
		{"MsgPackNaN", MsgPack, mp(0x81, "payload", f64(math.NaN())), "invalid MessagePack: NaN and infinite numbers are not supported"},
		{"MsgPackInf", MsgPack, mp(0x81, "payload", []byte{0xca, 0x7f, 0x80, 0x00, 0x00}), "invalid MessagePack: NaN and infinite numbers are not supported"},
		{"MsgPackBadUTF8", MsgPack, mp(0x81, "type", []byte{0xa1, 0xff}), "invalid MessagePack: string is not valid UTF-8"},
		{"MsgPackNeverUsed", MsgPack, []byte{0xc1}, "invalid MessagePack: invalid code 0xc1"},
		{"MsgPackDeep", MsgPack, deep, "invalid MessagePack: nested too deeply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var req EnqueueRequest
			err := Unmarshal(tt.format, tt.data, &req)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.EqualError(t, err, tt.want)
		})
	}
}

// TestUnmarshal_FieldNamesExact: field names match exactly; a name in
// another case is an unknown field, ignored.
func TestUnmarshal_FieldNamesExact(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		format Format
		data   []byte
		want   BudgetInput
	}{
		{"JSONUpper", JSON, []byte(`{"ALLOCATION":3,"Strategy":{"type":"t"}}`), BudgetInput{}},
		{"JSONNested", JSON, []byte(`{"allocation":3,"strategy":{"TYPE":"t"}}`), BudgetInput{Allocation: Ptr[int64](3), Strategy: &StrategyInput{}}},
		{"JSONExactWinsOverOtherCase", JSON, []byte(`{"allocation":3,"Allocation":4}`), BudgetInput{Allocation: Ptr[int64](3)}},
		{"MsgPackUpper", MsgPack, mp(0x81, "ALLOCATION", 0x03), BudgetInput{}},
		{"MsgPackExact", MsgPack, mp(0x81, "allocation", 0x03), BudgetInput{Allocation: Ptr[int64](3)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got BudgetInput
			require.NoError(t, Unmarshal(tt.format, tt.data, &got))
			require.Equal(t, tt.want, got)
		})
	}
}

func TestUnmarshal_NotAPointer(t *testing.T) {
	t.Parallel()
	err := Unmarshal(JSON, []byte(`{}`), EnqueueRequest{})
	require.Error(t, err)
	_, isDecodeError := err.(*DecodeError)
	require.False(t, isDecodeError, "a programming error is not a bad body")
}

func TestUnmarshal_MsgPackScalars(t *testing.T) {
	t.Parallel()
	// Every integer width and sign, as seen by the JSON decoding.
	tests := []struct {
		data []byte
		want string
	}{
		{[]byte{0x7f}, "127"},
		{[]byte{0xe0}, "-32"},
		{[]byte{0xcc, 0xff}, "255"},
		{[]byte{0xcd, 0xff, 0xff}, "65535"},
		{[]byte{0xce, 0xff, 0xff, 0xff, 0xff}, "4294967295"},
		{[]byte{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "18446744073709551615"},
		{[]byte{0xd0, 0x80}, "-128"},
		{[]byte{0xd1, 0x80, 0x00}, "-32768"},
		{[]byte{0xd2, 0x80, 0, 0, 0}, "-2147483648"},
		{[]byte{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, "-9223372036854775808"},
		{[]byte{0xd3, 0x00, 0, 0, 0, 0, 0, 0, 0x05}, "5"},
		{[]byte{0xca, 0x3d, 0xcc, 0xcc, 0xcd}, "0.1"},
		{[]byte{0xcb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a}, "0.1"},
		{[]byte{0xc2}, "false"},
		{[]byte{0xa3, '<', '"', '\n'}, `"<\"\n"`},
		{[]byte{0xa2, 0x01, 0x7f}, `"\u0001` + "\x7f" + `"`},
		{[]byte{0xda, 0x00, 0x01, 'x'}, `"x"`},
		{[]byte{0xdb, 0x00, 0x00, 0x00, 0x01, 'x'}, `"x"`},
		{[]byte{0xdc, 0x00, 0x01, 0x01}, "[1]"},
		{[]byte{0xde, 0x00, 0x01, 0xa1, 'k', 0x01}, `{"k":1}`},
		{[]byte{0xdf, 0x00, 0x00, 0x00, 0x01, 0xd9, 0x01, 'k', 0x90}, `{"k":[]}`},
	}
	for _, tt := range tests {
		js, err := msgpackToJSON(nil, tt.data)
		require.NoError(t, err, "%x", tt.data)
		require.Equal(t, tt.want, string(js), "%x", tt.data)
	}
}

func TestAppendJSONFloat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0.0"},
		{math.Copysign(0, -1), 64, "-0.0"},
		{1, 64, "1.0"},
		{-2.5, 64, "-2.5"},
		{123.456, 64, "123.456"},
		{123456789, 64, "123456789.0"},
		{1e15, 64, "1000000000000000.0"},
		{1234567890123456, 64, "1234567890123456.0"},
		{1e16, 64, "1e16"},
		{1e21, 64, "1e21"},
		{12345678901234567890, 64, "1.2345678901234567e19"},
		{0.1, 64, "0.1"},
		{0.00001, 64, "0.00001"},
		{0.000012, 64, "0.000012"},
		{0.000001, 64, "1e-6"},
		{1.5e-7, 64, "1.5e-7"},
		{1.5e-300, 64, "1.5e-300"},
		{math.MaxFloat64, 64, "1.7976931348623157e308"},
		{math.SmallestNonzeroFloat64, 64, "5e-324"},
		{float64(float32(0.1)), 32, "0.1"},
		{4, 32, "4.0"},
		{float64(float32(3e-7)), 32, "3e-7"},
		{float64(float32(math.MaxFloat32)), 32, "3.4028235e38"},
	}
	for _, tt := range tests {
		got, err := appendJSONFloat(nil, tt.f, tt.bits)
		require.NoError(t, err)
		require.Equal(t, tt.want, string(got))
	}
}

func TestAppendStreamFrame(t *testing.T) {
	t.Parallel()
	job := Job{ID: "j", Type: "t", Queue: "q", Status: "in_flight", Payload: Payload(`{"a":1}`), DequeuedAt: 2}
	js := `{"id":"j","type":"t","queue":"q","priority":0,"status":"in_flight","payload":{"a":1},"ready_at":0,"attempts":0,"dequeued_at":2}`

	b, err := AppendStreamFrame([]byte("prev"), NDJSON, job)
	require.NoError(t, err)
	require.Equal(t, "prev"+js+"\n", string(b))

	b, err = AppendStreamFrame(nil, SSE, job)
	require.NoError(t, err)
	require.Equal(t, "data: "+js+"\n\n", string(b))

	b, err = AppendStreamFrame([]byte{9}, MsgPackStream, job)
	require.NoError(t, err)
	body, err := Marshal(MsgPack, job)
	require.NoError(t, err)
	require.Equal(t, byte(9), b[0])
	require.Equal(t, uint32(len(body)), binary.BigEndian.Uint32(b[1:5]))
	require.Equal(t, body, b[5:])
	var back Job
	require.NoError(t, Unmarshal(MsgPack, b[5:], &back))
	require.Equal(t, job, back)
}

func TestAppendStreamFrame_ErrorLeavesDst(t *testing.T) {
	t.Parallel()
	for _, f := range []StreamFormat{NDJSON, MsgPackStream, SSE, StreamFormat(9)} {
		dst := []byte("keep")
		got, err := AppendStreamFrame(dst, f, Job{Payload: Payload("{")})
		require.Error(t, err, "format %d", f)
		require.Equal(t, "keep", string(got))
	}
}

func TestMarshal_UnknownFormat(t *testing.T) {
	t.Parallel()
	_, err := Marshal(Format(7), Job{})
	require.EqualError(t, err, "marshal: unknown format 7")
	require.EqualError(t, Unmarshal(Format(7), []byte("{}"), &Job{}), "unmarshal: unknown format 7")
}

// fuzzTargets are the request bodies the fuzz targets decode into.
func fuzzTargets() []func() any {
	return []func() any{
		func() any { return new(EnqueueRequest) },
		func() any { return new(BulkEnqueueRequest) },
		func() any { return new(FailureRequest) },
		func() any { return new(BudgetInput) },
	}
}

var fuzzSeeds = []string{
	`{"type":"t","queue":"q","payload":{"b":1,"a":[1.5,null,"x"]},"priority":5,"ready_at":1,"retry_limit":3,` +
		`"backoff":{"exponent":2.5,"base_ms":1,"jitter_ms":2},"retention":{"completed_ms":1,"dead_ms":2},` +
		`"unique_key":"u","unique_while":"queued","batch":{"key":"k","when":"true","fold":"$new"},` +
		`"budgets":[{"key":"b","cost":2,"create_with":{"allocation":5,"strategy":{"type":"time_based","duration_ms":1000,"burst":2}}}]}`,
	`{"jobs":[{"type":"t","queue":"q","payload":null},{"type":"u","queue":"q","payload":18446744073709551615}]}`,
	`{"message":"boom","error_type":"E","backtrace":"x\ny","retry_at":5,"kill":true}`,
	`{"allocation":3,"strategy":{"type":"while_in_flight"}}`,
	`{"priority":70000}`,
	`{"payload":-9223372036854775808}`,
	`[]`,
	`null`,
	``,
}

func FuzzUnmarshalJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, target := range fuzzTargets() {
			v := target()
			if err := Unmarshal(JSON, data, v); err != nil {
				var de *DecodeError
				require.ErrorAs(t, err, &de)
				continue
			}
			// Re-encoding is stable. (Values may differ by omitempty: an
			// empty list that was sent is omitted, then absent.)
			b, err := Marshal(JSON, v)
			require.NoError(t, err)
			again := target()
			require.NoError(t, Unmarshal(JSON, b, again), "%s", b)
			b2, err := Marshal(JSON, again)
			require.NoError(t, err)
			require.Equal(t, string(b), string(b2))
			_, err = Marshal(MsgPack, v)
			require.NoError(t, err)
		}
	})
}

func FuzzUnmarshalMsgPack(f *testing.F) {
	for _, s := range fuzzSeeds {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			f.Add([]byte(s))
			continue
		}
		b, err := Marshal(MsgPack, v)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{0x81, 0xa7, 'p', 'a', 'y', 'l', 'o', 'a', 'd', 0xca, 0x3d, 0xcc, 0xcc, 0xcd})
	f.Add([]byte{0x81, 0xa4, 'j', 'o', 'b', 's', 0x91, 0x80})
	f.Add([]byte{0x81, 0x01, 0x02})
	f.Add([]byte{0xc4, 0x00})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, target := range fuzzTargets() {
			v := target()
			if err := Unmarshal(MsgPack, data, v); err != nil {
				var de *DecodeError
				require.ErrorAs(t, err, &de)
				continue
			}
			// A successful decode re-encodes, decodes again, and the second
			// encoding is the same as the first.
			b, err := Marshal(MsgPack, v)
			require.NoError(t, err)
			again := target()
			require.NoError(t, Unmarshal(MsgPack, b, again), "%x", b)
			b2, err := Marshal(MsgPack, again)
			require.NoError(t, err)
			require.Equal(t, b, b2)
			_, err = Marshal(JSON, v)
			require.NoError(t, err)
		}
	})
}

func BenchmarkAppendStreamFrame(b *testing.B) {
	job := Job{
		ID: id1, Type: "send_email", Queue: "emails", Priority: 32768, Status: "in_flight",
		Payload: Payload(`{"template":"welcome","to":"someone@example.com","user_id":123456}`),
		ReadyAt: 1700000000000, DequeuedAt: 1700000000123,
	}
	for _, bc := range []struct {
		name string
		f    StreamFormat
	}{{"NDJSON", NDJSON}, {"MsgPackStream", MsgPackStream}, {"SSE", SSE}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var err error
				buf, err = AppendStreamFrame(buf[:0], bc.f, &job)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzPayloadMsgPack checks that a canonical payload survives MessagePack:
// it encodes, decodes to the same value (numbers compared by value, as
// "1.50" comes back as "1.5"), and a second trip changes nothing.
func FuzzPayloadMsgPack(f *testing.F) {
	for _, s := range []string{trickyPayload, `null`, `"x"`, `[1,-0,1E2,0.5e-3]`, `{"b":{"d":1,"c":2},"a":"\u00e9\ud83d"}`, `1e400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		canon, err := CanonicalJSON(data)
		if err != nil {
			return
		}
		b, err := Marshal(MsgPack, Payload(canon))
		require.NoError(t, err, "%s", canon)
		var back Payload
		if err := Unmarshal(MsgPack, b, &back); err != nil {
			// Only numbers beyond float64 (1e400) have no MessagePack form.
			require.EqualError(t, err, "invalid MessagePack: NaN and infinite numbers are not supported", "%s", canon)
			return
		}
		requireSameJSON(t, canon, back)
		b2, err := Marshal(MsgPack, back)
		require.NoError(t, err)
		require.Equal(t, b, b2, "%s", canon)
	})
}

func requireSameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	decode := func(b []byte) any {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		return v
	}
	require.True(t, sameJSONValue(decode(want), decode(got)), "want %s\ngot  %s", want, got)
}

func sameJSONValue(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !sameJSONValue(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSONValue(a[i], b[i]) {
				return false
			}
		}
		return true
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		if ai, err := a.Int64(); err == nil {
			bi, err := b.Int64()
			return err == nil && ai == bi
		}
		if au, err := strconv.ParseUint(string(a), 10, 64); err == nil {
			bu, err := strconv.ParseUint(string(b), 10, 64)
			return err == nil && au == bu
		}
		af, _ := a.Float64()
		bf, _ := b.Float64()
		return af == bf
	default:
		return a == b
	}
}
