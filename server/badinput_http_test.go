package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
)

// badCase is a request that must be refused with status and an error body;
// msg is the exact error text, or a prefix of it when prefix is set.
type badCase struct {
	name        string
	method      string
	path        string
	body        any
	header      []string
	status      int
	msg         string
	prefix      bool
	contentType string // of the body; "" for JSON
}

// runBad sends each case and checks that it is refused with a JSON error
// body and that nothing was stored.
func runBad(t *testing.T, tb *testBundle, cases []badCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			header := append([]string(nil), c.header...)
			if c.contentType != "" {
				header = append(header, "Content-Type", c.contentType)
			}
			method := c.method
			if method == "" {
				method = "POST"
			}
			r := tb.req(t, method, c.path, c.body, header...)
			require.Equal(t, c.status, r.status, "body: %s", r.body)
			require.Equal(t, "application/json", r.header.Get("Content-Type"))
			msg := r.errorText(t)
			if c.prefix {
				require.True(t, strings.HasPrefix(msg, c.msg), "error %q should start with %q", msg, c.msg)
			} else {
				require.Equal(t, c.msg, msg)
			}
			require.Zero(t, jobCount(t, tb, ""), "nothing stored")
		})
	}
}

func enqueueBody(fields string) string {
	return `{"type":"t","queue":"q","payload":null` + fields + `}`
}

func TestBadInput_Enqueue(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	mp := func(v any) []byte {
		b, err := api.Marshal(api.MsgPack, v)
		require.NoError(t, err)
		return b
	}
	cases := []badCase{
		{name: "MalformedJSON", path: "/jobs", body: `{"type":"t",`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "NotAnObject", path: "/jobs", body: `[1,2]`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "EmptyBody", path: "/jobs", body: ``, status: 400, msg: "invalid JSON: empty body"},
		{name: "TrailingData", path: "/jobs", body: enqueueBody("") + `{}`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "MalformedMsgPack", path: "/jobs", body: []byte{0x83, 0xa4, 't', 'y'}, contentType: "application/msgpack", status: 400, msg: "invalid MessagePack: ", prefix: true},
		{name: "MsgPackInvalidCode", path: "/jobs", body: []byte{0xc1}, contentType: "application/msgpack", status: 400, msg: "invalid MessagePack: ", prefix: true},
		{name: "MsgPackNotAMap", path: "/jobs", body: mp([]int{1, 2}), contentType: "application/msgpack", status: 400, msg: "invalid MessagePack: ", prefix: true},
		{name: "MsgPackMissingType", path: "/jobs", body: mp(map[string]any{"queue": "q", "payload": nil}), contentType: "application/msgpack", status: 400, msg: "invalid MessagePack: missing field `type`"},
		{name: "MsgPackPriorityOutOfRange", path: "/jobs", body: mp(map[string]any{"type": "t", "queue": "q", "payload": nil, "priority": 70000}), contentType: "application/msgpack", status: 400, msg: "invalid MessagePack: ", prefix: true},
		{name: "PriorityString", path: "/jobs", body: enqueueBody(`,"priority":"x"`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "PriorityOutOfRange", path: "/jobs", body: enqueueBody(`,"priority":70000`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "PriorityNegative", path: "/jobs", body: enqueueBody(`,"priority":-1`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "PriorityFloat", path: "/jobs", body: enqueueBody(`,"priority":1.5`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "ReadyAtNegative", path: "/jobs", body: enqueueBody(`,"ready_at":-5`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "ReadyAtTooLate", path: "/jobs", body: enqueueBody(`,"ready_at":18446744073709551615`), status: 400, msg: "ready_at must be at most ", prefix: true},
		{name: "RetryLimitNegative", path: "/jobs", body: enqueueBody(`,"retry_limit":-1`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "TypeNotString", path: "/jobs", body: `{"type":5,"queue":"q","payload":null}`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "MissingType", path: "/jobs", body: `{"queue":"q","payload":null}`, status: 400, msg: "invalid JSON: missing field `type`"},
		{name: "MissingQueue", path: "/jobs", body: `{"type":"t","payload":null}`, status: 400, msg: "invalid JSON: missing field `queue`"},
		{name: "MissingPayload", path: "/jobs", body: `{"type":"t","queue":"q"}`, status: 400, msg: "invalid JSON: missing field `payload`"},
		{name: "BackoffIncomplete", path: "/jobs", body: enqueueBody(`,"backoff":{"exponent":2,"base_ms":1}`), status: 400, msg: "invalid JSON: missing field `jitter_ms`"},
		{name: "BackoffNegativeExponent", path: "/jobs", body: enqueueBody(`,"backoff":{"exponent":-1,"base_ms":1,"jitter_ms":1}`), status: 400, msg: "backoff exponent must be a finite number, at least 0"},
		{name: "RetentionWrongType", path: "/jobs", body: enqueueBody(`,"retention":{"completed_ms":"1s"}`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "UniqueWhileInvalid", path: "/jobs", body: enqueueBody(`,"unique_key":"k","unique_while":"always"`), status: 400, msg: `invalid unique_while: "always" (expected "queued", "active", or "exists")`},
		{name: "UniqueWhileNotString", path: "/jobs", body: enqueueBody(`,"unique_key":"k","unique_while":1`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "UniqueKeyEmpty", path: "/jobs", body: enqueueBody(`,"unique_key":""`), status: 400, msg: "unique_key must not be empty"},
		{name: "UniqueKeyNotString", path: "/jobs", body: enqueueBody(`,"unique_key":5`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "UniqueWhileAlone", path: "/jobs", body: enqueueBody(`,"unique_while":"queued"`), status: 400, msg: "unique_while requires unique_key"},
		{name: "UniqueAndBatch", path: "/jobs", body: enqueueBody(`,"unique_key":"k","batch":{"key":"b","when":"true","fold":"$new"}`), status: 400, msg: "unique_key and batch cannot be combined"},
		{name: "BatchMissingKey", path: "/jobs", body: enqueueBody(`,"batch":{"when":"true","fold":"$new"}`), status: 400, msg: "invalid JSON: missing field `key`"},
		{name: "BatchMissingWhen", path: "/jobs", body: enqueueBody(`,"batch":{"key":"b","fold":"$new"}`), status: 400, msg: "invalid JSON: missing field `when`"},
		{name: "BatchMissingFold", path: "/jobs", body: enqueueBody(`,"batch":{"key":"b","when":"true"}`), status: 400, msg: "invalid JSON: missing field `fold`"},
		{name: "BatchMissingFieldFirst", path: "/jobs", body: `{"type":"t","queue":"a,b","payload":null,"batch":{"key":"b","when":"true"}}`, status: 400, msg: "invalid JSON: missing field `fold`"},
		{name: "BatchNotAnObject", path: "/jobs", body: enqueueBody(`,"batch":"b"`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "BatchKeyNotString", path: "/jobs", body: enqueueBody(`,"batch":{"key":1,"when":"true","fold":"$new"}`), status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "BatchBadExpression", path: "/jobs", body: enqueueBody(`,"batch":{"key":"b","when":".[*]","fold":"$new"}`), status: 422, msg: "batch expression: when: ", prefix: true},
		{name: "BatchDryRun", path: "/jobs", body: enqueueBody(`,"batch":{"key":"b","when":"true","fold":"$existing, $new"}`), status: 422, msg: "batch dry-run: fold: fold expression produced more than one output"},
		{name: "BulkBatchMissingFold", path: "/jobs/bulk", body: `{"jobs":[` + enqueueBody("") + `,` + enqueueBody(`,"batch":{"key":"b","when":"true"}`) + `]}`, status: 400, msg: "jobs[1]: invalid JSON: missing field `fold`"},
		{name: "BulkBatchDryRun", path: "/jobs/bulk", body: `{"jobs":[` + enqueueBody("") + `,` + enqueueBody(`,"batch":{"key":"b","when":"$existing | keys","fold":"$new"}`) + `]}`, status: 422, msg: "jobs[1]: batch dry-run: when: expression failed at runtime: ", prefix: true},
		{name: "BulkUniqueWhileInvalid", path: "/jobs/bulk", body: `{"jobs":[` + enqueueBody(`,"unique_key":"k"`) + `,` + enqueueBody(`,"unique_key":"k","unique_while":"x"`) + `]}`, status: 400, msg: `jobs[1]: invalid unique_while: "x" (expected "queued", "active", or "exists")`},
		{name: "BulkUniqueWhileAlone", path: "/jobs/bulk", body: `{"jobs":[` + enqueueBody("") + `,` + enqueueBody(`,"unique_while":"exists"`) + `]}`, status: 400, msg: "jobs[1]: unique_while requires unique_key"},
		{name: "BulkUniqueAndBatch", path: "/jobs/bulk", body: `{"jobs":[` + enqueueBody(`,"unique_key":"k","batch":{"key":"b","when":"true","fold":"$new"}`) + `]}`, status: 400, msg: "jobs[0]: unique_key and batch cannot be combined"},
		{name: "BulkMissingJobs", path: "/jobs/bulk", body: `{}`, status: 400, msg: "invalid JSON: missing field `jobs`"},
		{name: "BulkJobsNotArray", path: "/jobs/bulk", body: `{"jobs":{}}`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "BulkBadItem", path: "/jobs/bulk", body: `{"jobs":[` + enqueueBody("") + `,` + enqueueBody(`,"priority":"x"`) + `]}`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "BulkMissingField", path: "/jobs/bulk", body: `{"jobs":[` + enqueueBody("") + `,{"type":"t","payload":1}]}`, status: 400, msg: "jobs[1]: invalid JSON: missing field `queue`"},
		{name: "UnsupportedContentType", path: "/jobs", body: enqueueBody(""), contentType: "text/plain", status: 415, msg: "unsupported media type"},
		{name: "FormContentType", path: "/jobs", body: "type=t", contentType: "application/x-www-form-urlencoded", status: 415, msg: "unsupported media type"},
		{name: "NotAcceptable", path: "/jobs", body: enqueueBody(""), header: []string{"Accept", "text/html"}, status: 406, msg: "not acceptable"},
	}
	// Reserved and forbidden characters in names (docs/API.md §Names).
	for _, field := range []string{"queue", "type"} {
		for _, c := range []string{"*", "?", "[", "]", "{", "}", `\`} {
			name := "a" + c + "b"
			body := map[string]any{"type": "t", "queue": "q", "payload": nil}
			body[field] = name
			want := fmt.Sprintf("%s must not contain '%s' (reserved)", field, c)
			cases = append(cases,
				badCase{name: "Reserved_" + field + "_" + c, path: "/jobs", body: body, status: 400, msg: want},
				badCase{name: "BulkReserved_" + field + "_" + c, path: "/jobs/bulk", body: map[string]any{"jobs": []any{
					map[string]any{"type": "t", "queue": "q", "payload": 1}, body,
				}}, status: 400, msg: "jobs[1]: " + want},
			)
		}
		for _, bad := range []struct{ name, value, msg string }{
			{"Comma", "a,b", field + " must not contain ','"},
			{"Empty", "", field + " must not be empty"},
			{"NUL", "a\x00b", field + " must not contain null bytes"},
		} {
			body := map[string]any{"type": "t", "queue": "q", "payload": nil}
			body[field] = bad.value
			cases = append(cases, badCase{name: bad.name + "_" + field, path: "/jobs", body: body, status: 400, msg: bad.msg})
		}
	}
	runBad(t, tb, cases)
}

func TestBadInput_Queries(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	invalid := "invalid query parameters: "
	var cases []badCase
	for _, path := range []string{"/jobs", "/jobs/count"} {
		cases = append(cases,
			badCase{name: path + "_UnknownKey", method: "GET", path: path + "?bogus=1", status: 400, msg: invalid + "unknown field `bogus`", prefix: true},
			badCase{name: path + "_RangeReversed", method: "GET", path: path + "?priority=5..1", status: 400, msg: invalid + "range lower bound exceeds upper bound"},
			badCase{name: path + "_AttemptsNegative", method: "GET", path: path + "?attempts=-1", status: 400, msg: invalid, prefix: true},
			badCase{name: path + "_AttemptsNegativeRange", method: "GET", path: path + "?attempts=-3..-1", status: 400, msg: invalid, prefix: true},
			badCase{name: path + "_PriorityTooBig", method: "GET", path: path + "?priority=70000", status: 400, msg: invalid, prefix: true},
			badCase{name: path + "_PriorityNotNumber", method: "GET", path: path + "?priority=high", status: 400, msg: invalid, prefix: true},
			badCase{name: path + "_ReadyAtReversed", method: "GET", path: path + "?ready_at=10..9", status: 400, msg: invalid + "range lower bound exceeds upper bound"},
			badCase{name: path + "_BadID", method: "GET", path: path + "?id=abc", status: 400, msg: `invalid job ID: "abc"`},
			badCase{name: path + "_UpperCaseID", method: "GET", path: path + "?id=03HBSIUFSZC90A0Y1QZXF55N8", status: 400, msg: `invalid job ID: "03HBSIUFSZC90A0Y1QZXF55N8"`},
			badCase{name: path + "_SecondIDBad", method: "GET", path: path + "?id=03hbsiufszc90a0y1qzxf55n8,x", status: 400, msg: `invalid job ID: "x"`},
			badCase{name: path + "_UnknownStatus", method: "GET", path: path + "?status=ready,x", status: 400, msg: invalid + "unknown status: x"},
			badCase{name: path + "_BadFilter", method: "GET", path: path + "?filter=.a%20%3D%3D", status: 400, msg: "invalid filter: ", prefix: true},
		)
	}
	cases = append(cases,
		badCase{name: "LimitZero", method: "GET", path: "/jobs?limit=0", status: 400, msg: "limit must be between 1 and 2000"},
		badCase{name: "OrderBad", method: "GET", path: "/jobs?order=up", status: 400, msg: invalid, prefix: true},
		badCase{name: "TakeUnknownKey", method: "GET", path: "/jobs/take?bogus=1", status: 400, msg: invalid + "unknown field `bogus`", prefix: true},
		badCase{name: "ErrorsUnknownKey", method: "GET", path: "/jobs/0000000000000000000000000/errors?bogus=1", status: 400, msg: invalid + "unknown field `bogus`", prefix: true},
		badCase{name: "DeleteUnknownKey", method: "DELETE", path: "/jobs?bogus=1", status: 400, msg: invalid + "unknown field `bogus`", prefix: true},
		badCase{name: "PatchUnknownKey", method: "PATCH", path: "/jobs?bogus=1", body: `{}`, status: 400, msg: invalid + "unknown field `bogus`", prefix: true},
		badCase{name: "ErrorAttemptNotNumber", method: "GET", path: "/jobs/0000000000000000000000000/errors/x", status: 400, msg: `invalid attempt: "x"`},
	)
	runBad(t, tb, cases)

	// A refused bulk delete or patch leaves the jobs alone.
	j := tb.enqueue(t, `{"type":"t","queue":"q","payload":null}`)
	for _, c := range []struct{ method, path, body string }{
		{"DELETE", "/jobs?bogus=1", ""},
		{"DELETE", "/jobs?priority=5..1", ""},
		{"DELETE", "/jobs?id=nope", ""},
		{"PATCH", "/jobs?priority=5..1", `{"priority":1}`},
		{"PATCH", "/jobs?queue=q", `{"priority":"x"}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := tb.req(t, c.method, c.path, body)
		require.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", c.method, c.path, r.body)
		r.errorText(t)
	}
	got := jobByID(t, tb, j.ID)
	require.Equal(t, uint16(32768), got.Priority)
}

func TestBadInput_Acks(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	runBad(t, tb, []badCase{
		{name: "BulkEmpty", path: "/jobs/success", body: `{"ids":[]}`, status: 400, msg: "ids must not be empty"},
		{name: "BulkMissingIDs", path: "/jobs/success", body: `{}`, status: 400, msg: "ids must not be empty"},
		{name: "BulkIDsNotStrings", path: "/jobs/success", body: `{"ids":[1]}`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "BulkMalformed", path: "/jobs/success", body: `{"ids":`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "FailureMalformed", path: "/jobs/0000000000000000000000000/failure", body: `nope`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "FailureMissingMessage", path: "/jobs/0000000000000000000000000/failure", body: `{}`, status: 400, msg: "invalid JSON: missing field `message`"},
		{name: "FailureRetryAtNegative", path: "/jobs/0000000000000000000000000/failure", body: `{"message":"m","retry_at":-1}`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "FailureKillString", path: "/jobs/0000000000000000000000000/failure", body: `{"message":"m","kill":"yes"}`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "PatchMalformed", method: "PATCH", path: "/jobs/0000000000000000000000000", body: `{`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "PatchNotObject", method: "PATCH", path: "/jobs/0000000000000000000000000", body: `[]`, status: 400, msg: "invalid JSON: ", prefix: true},
		{name: "PatchUnknownJob", method: "PATCH", path: "/jobs/0000000000000000000000000", body: `{"priority":1}`, status: 404, msg: "job not found"},
	})
}

func TestBadInput_Routing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	runBad(t, tb, []badCase{
		{name: "UnknownPath", method: "GET", path: "/nope", status: 404, msg: "not found"},
		{name: "UnknownNestedPath", method: "POST", path: "/jobs/x/y/z/w", status: 404, msg: "not found"},
		{name: "Root", method: "GET", path: "/", status: 404, msg: "not found"},
		{name: "CronGroupUnknown", method: "GET", path: "/crons/g", status: 404, msg: "cron group 'g' not found"},
		{name: "CronGroupPutNoEntries", method: "PUT", path: "/crons/g", body: `{}`, status: 400, msg: "invalid JSON: missing field `entries`"},
		{name: "CronEntriesPostNoName", method: "POST", path: "/crons/g/entries", body: `{}`, status: 400, msg: "invalid JSON: missing field `name`"},
		{name: "CronEntryPatchUnknown", method: "PATCH", path: "/crons/g/entries/e", body: `{"paused":true}`, status: 404, msg: "cron entry 'e' not found in group 'g'"},
		{name: "CronEntriesGet", method: "GET", path: "/crons/g/entries", status: 405, msg: "method not allowed"},
	})

	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/jobs", "DELETE, GET, PATCH, POST"},
		{"GET", "/jobs/bulk", "POST"},
		{"DELETE", "/health", "GET"},
		{"POST", "/jobs/take", "GET"},
		{"GET", "/reset", "POST"},
		{"PUT", "/jobs/0000000000000000000000000", "DELETE, GET, PATCH"},
		{"GET", "/jobs/0000000000000000000000000/success", "POST"},
	} {
		r := tb.req(t, c.method, c.path, nil)
		require.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s", c.method, c.path)
		require.Equal(t, c.allow, r.header.Get("Allow"), "%s %s", c.method, c.path)
		require.Equal(t, `{"error":"method not allowed"}`, string(r.body))
	}
	r := tb.req(t, "GET", "/nope", nil)
	require.Equal(t, `{"error":"not found"}`, string(r.body))
}

func TestBadInput_BodyTooLarge(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *server.Options) { o.HTTP.MaxBodyBytes = 1024 })
	big := `{"type":"t","queue":"q","payload":"` + strings.Repeat("x", 4096) + `"}`
	runBad(t, tb, []badCase{
		{name: "Enqueue", path: "/jobs", body: big, status: 413, msg: "request body exceeds 1024 bytes"},
		{name: "Bulk", path: "/jobs/bulk", body: `{"jobs":[` + big + `]}`, status: 413, msg: "request body exceeds 1024 bytes"},
		{name: "MsgPack", path: "/jobs", body: func() []byte {
			b, err := api.Marshal(api.MsgPack, api.EnqueueRequest{Type: api.Ptr("t"), Queue: api.Ptr("q"), Payload: api.Payload(`"` + strings.Repeat("y", 4096) + `"`)})
			require.NoError(t, err)
			return b
		}(), contentType: "application/msgpack", status: 413, msg: "request body exceeds 1024 bytes"},
	})
	// Just under the limit still works.
	ok := `{"type":"t","queue":"q","payload":"` + strings.Repeat("x", 900) + `"}`
	tb.enqueue(t, ok)
}
