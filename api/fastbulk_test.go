package api

import (
	"strconv"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeBulkFast: whatever body the fast bulk decoder accepts, the
// general decoder accepts too and decodes to the same request.
func FuzzDecodeBulkFast(f *testing.F) {
	for _, s := range []string{
		`{"jobs":[{"type":"send_email","queue":"emails","payload":{"a":1,"b":[true,null,"x"]}},{"type":"send_email","queue":"emails","payload":{"t":2,"i":1,"pad":"xx"}}]}`,
		` { "jobs" : [ { "queue" : "q" , "type" : "t" , "priority" : 7 , "ready_at" : 1700000000000 } ] } `,
		`{"jobs":[]}`,
		`{"jobs":[{}]}`,
		`{"jobs":[{"type":"t","type":"u"}]}`,
		`{"jobs":[{"type":"t","queue":"q","payload":null}]}`,
		`{"jobs":[{"type":"é","queue":"q","payload":"\u00e9"}]}`,
		`{"jobs":[{"type":"t","priority":65536}]}`,
		`{"jobs":[{"type":"t","priority":1.0}]}`,
		`{"jobs":[{"type":"t","priority":01}]}`,
		`{"jobs":[{"type":"t","ready_at":18446744073709551615}]}`,
		`{"jobs":[{"type":"t","queue":"q","payload":[1,{"b":1,"a":2}]}],"x":1}`,
		`{"jobs":null}`,
		`{"jobs":[{"type":"t","payload":{"a":1} }]}`,
		`{"jobs":[{"type":"t","queue":"q","budgets":[{"key":"api","cost":2},{"cost":1,"key":"b/c"}]},{"type":"t","queue":"q","budgets":[]}]}`,
		`{"jobs":[{"type":"t","budgets":[{"key":"k","key":"j"}]}]}`,
		`{"jobs":[{"type":"t","budgets":[{"key":"k","cost":-1}]}]}`,
		`{"jobs":[{"type":"t","budgets":[{"key":"k","create_with":{"allocation":1}}]}]}`,
		`{"jobs":[{"type":"t","budgets":null}]}`,
		`{"jobs":[{"type":"t","budgets":[{}]}]}`,
		`{"jobs":[{"type":"t","budgets":[{"key":"k","cost":9223372036854775808}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast BulkEnqueueRequest
		if !decodeBulkFast(data, &fast) {
			require.Nil(t, fast.Jobs, "a declined body leaves the request untouched")
			return
		}
		var general BulkEnqueueRequest
		require.NoError(t, jsonv2.Unmarshal(data, &general, decodeOptions), "the fast decoder accepted %q", data)
		require.Equal(t, general, fast, "%q", data)
	})
}

// TestDecodeBulkFast_Takes: the usual bulk bodies take the fast path, and
// a request that is not empty is left to the general decoder.
func TestDecodeBulkFast_Takes(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"jobs":[{"type":"t","queue":"q","payload":{"i":1,"t":2,"pad":"xxx"}},{"type":"t","queue":"q","payload":{"i":2}}]}`,
		"{\n  \"jobs\": [\n    {\"type\": \"t\", \"queue\": \"q\", \"priority\": 1, \"ready_at\": 5, \"payload\": [1, 2]}\n  ]\n}\n",
		`{"jobs":[{"type":"t","queue":"q","budgets":[{"key":"api","cost":2}]}]}`,
	} {
		var got BulkEnqueueRequest
		require.True(t, decodeBulkFast([]byte(body), &got), body)
		require.NotEmpty(t, got.Jobs)
	}
	got := BulkEnqueueRequest{Jobs: []EnqueueRequest{}}
	require.False(t, decodeBulkFast([]byte(`{"jobs":[]}`), &got))

	var shared BulkEnqueueRequest
	require.True(t, decodeBulkFast([]byte(`{"jobs":[{"type":"t","queue":"q"},{"type":"t","queue":"r"}]}`), &shared))
	require.Same(t, shared.Jobs[0].Type, shared.Jobs[1].Type, "a type equal to the job before shares its string")
	require.Equal(t, "r", *shared.Jobs[1].Queue)
}

// BenchmarkDecodeBulk decodes a bulk enqueue of 1,000 plain jobs through
// decodeJSON (the fast path) and through the general decoder alone.
func BenchmarkDecodeBulk(b *testing.B) {
	var body []byte
	body = append(body, `{"jobs":[`...)
	for i := range 1000 {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"type":"send_email","queue":"emails","payload":{"to":"user@example.com","n":`...)
		body = strconv.AppendInt(body, int64(i), 10)
		body = append(body, `}}`...)
	}
	body = append(body, `]}`...)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			var req BulkEnqueueRequest
			if err := decodeJSON("", body, &req); err != nil || len(req.Jobs) != 1000 {
				b.Fatal(err)
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			var req BulkEnqueueRequest
			if err := jsonv2.Unmarshal(body, &req, decodeOptions); err != nil {
				b.Fatal(err)
			}
		}
	})
}
