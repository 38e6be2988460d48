package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// refusal is a request the server must refuse with status and exactly msg,
// changing nothing.
type refusal struct {
	name, method, path string
	body               any
	msgpack            bool // the body is MessagePack
	status             int
	msg                string
}

// refuseTarget is a server holding one job and one budget, and a snapshot
// of everything a refused request must leave as it is.
type refuseTarget struct {
	tb  *testBundle
	job string
}

func newRefuseTarget(t *testing.T) *refuseTarget {
	tb := setup(t)
	tb.budPut(t, "k", `{"allocation":2,"strategy":{"type":"time_based","duration_ms":1000}}`)
	j := tb.enqueue(t, `{"type":"t","queue":"a","payload":{"x":1}}`)
	return &refuseTarget{tb: tb, job: j.ID}
}

// state is what the server shows of its jobs and budgets.
func (rt *refuseTarget) state(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, path := range []string{"/jobs/" + rt.job, "/budgets", "/jobs?queue=a,b", "/jobs/count"} {
		r := rt.tb.req(t, "GET", path, nil)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
		b.Write(r.body)
		b.WriteByte('\n')
	}
	return b.String()
}

func (rt *refuseTarget) run(t *testing.T, cases []refusal) {
	t.Helper()
	before := rt.state(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var header []string
			if c.msgpack {
				header = []string{"Content-Type", api.MediaMsgPack}
				if m, ok := c.body.(map[string]any); ok {
					b, err := api.Marshal(api.MsgPack, m)
					require.NoError(t, err)
					c.body = b
				}
			}
			path := strings.ReplaceAll(c.path, "{job}", rt.job)
			r := rt.tb.req(t, c.method, path, c.body, header...)
			require.Equal(t, c.status, r.status, "body: %s", r.body)
			require.Equal(t, "application/json", r.header.Get("Content-Type"))
			require.Equal(t, c.msg, r.errorText(t))
			require.Equal(t, before, rt.state(t), "a refused request changes nothing")
		})
	}
}

// TestRefuse_FieldNamesMatchExactly: body field names match exactly, in
// JSON and MessagePack. Where unknown fields are ignored (enqueue, POST and
// PUT of a budget) a name in the wrong case is unknown, so the field is
// missing; PATCH bodies refuse unknown fields, naming them.
func TestRefuse_FieldNamesMatchExactly(t *testing.T) {
	t.Parallel()
	rt := newRefuseTarget(t)
	rt.run(t, []refusal{
		{"PutBudgetUpperCase", "PUT", "/budgets/k", `{"ALLOCATION":3,"strategy":{"type":"while_in_flight"}}`, false, 400, "invalid JSON: missing field `allocation`"},
		{"PutBudgetBothCases", "PUT", "/budgets/k", `{"allocation":2,"Allocation":3,"strategy":{"type":"while_in_flight","duration_ms":1}}`, false, 422, "duration_ms is only valid for time_based budgets"},
		{"PutBudgetNested", "PUT", "/budgets/k", `{"allocation":3,"strategy":{"Type":"while_in_flight"}}`, false, 400, "invalid JSON: missing field `type`"},
		{"PostBudgetUpperCase", "POST", "/budgets/new", `{"ALLOCATION":3,"strategy":{"type":"while_in_flight"}}`, false, 400, "invalid JSON: missing field `allocation`"},
		{"PutBudgetMsgPack", "PUT", "/budgets/k", map[string]any{"ALLOCATION": 3, "strategy": map[string]any{"type": "while_in_flight"}}, true, 400, "invalid MessagePack: missing field `allocation`"},
		{"EnqueueUpperCase", "POST", "/jobs", `{"TYPE":"t","queue":"a","payload":null}`, false, 400, "invalid JSON: missing field `type`"},
		{"EnqueueMsgPack", "POST", "/jobs", map[string]any{"type": "t", "Queue": "a", "payload": nil}, true, 400, "invalid MessagePack: missing field `queue`"},
		{"EnqueueBindingKey", "POST", "/jobs", `{"type":"t","queue":"a","payload":null,"budgets":[{"KEY":"k"}]}`, false, 400, "invalid JSON: missing field `key`"},
		{"PatchBudget", "PATCH", "/budgets/k", `{"ALLOCATION":3}`, false, 422, `unknown field "ALLOCATION"`},
		{"PatchBudgetMsgPack", "PATCH", "/budgets/k", map[string]any{"ALLOCATION": 3}, true, 422, `unknown field "ALLOCATION"`},
		{"PatchBudgetStrategy", "PATCH", "/budgets/k", `{"strategy":{"Burst":3}}`, false, 422, `unknown field "strategy.Burst"`},
		{"PatchBudgetUnknown", "PATCH", "/budgets/k", `{"allocation":3,"capacity":3}`, false, 422, `unknown field "capacity"`},
		{"PatchJob", "PATCH", "/jobs/{job}", `{"PRIORITY":3}`, false, 422, `unknown field "PRIORITY"`},
		{"PatchJobMsgPack", "PATCH", "/jobs/{job}", map[string]any{"Queue": "b"}, true, 422, `unknown field "Queue"`},
		{"PatchJobFirstUnknown", "PATCH", "/jobs/{job}", `{"zz":1,"priority":3,"aa":2}`, false, 422, `unknown field "aa"`},
		{"PatchJobRetention", "PATCH", "/jobs/{job}", `{"retention":{"completed":1}}`, false, 422, `unknown field "retention.completed"`},
		{"PatchJobBackoff", "PATCH", "/jobs/{job}", `{"backoff":{"exponent":2,"base_ms":1,"jitter_ms":1,"max_ms":5}}`, false, 422, `unknown field "backoff.max_ms"`},
		{"PatchJobsBulk", "PATCH", "/jobs?queue=a", `{"Priority":3}`, false, 422, `unknown field "Priority"`},
		{"PatchJobsBulkMsgPack", "PATCH", "/jobs?queue=a", map[string]any{"priority": 3, "READY_AT": nil}, true, 422, `unknown field "READY_AT"`},
	})
}

// TestRefuse_InvalidUTF8: a budget key in the path that is not UTF-8 is
// refused (it would be listed as U+FFFD and then not found); a body string
// that is not UTF-8 makes the body undecodable (400), in JSON as in
// MessagePack, rather than being mangled into U+FFFD.
func TestRefuse_InvalidUTF8(t *testing.T) {
	t.Parallel()
	rt := newRefuseTarget(t)
	budget := `{"allocation":1,"strategy":{"type":"while_in_flight"}}`
	rt.run(t, []refusal{
		{"PutBudget", "PUT", "/budgets/%FF", budget, false, 400, "invalid path: budget key must be valid UTF-8"},
		{"PostBudget", "POST", "/budgets/a%C3", budget, false, 400, "invalid path: budget key must be valid UTF-8"},
		{"BindingKey", "POST", "/jobs", "{\"type\":\"t\",\"queue\":\"a\",\"payload\":null,\"budgets\":[{\"key\":\"\xff\"}]}", false, 400, "invalid JSON: invalid UTF-8"},
		{"CreateWithKey", "POST", "/jobs", "{\"type\":\"t\",\"queue\":\"a\",\"payload\":null,\"budgets\":[{\"key\":\"n\xff\",\"create_with\":" + budget + "}]}", false, 400, "invalid JSON: invalid UTF-8"},
		{"Queue", "POST", "/jobs", "{\"type\":\"t\",\"queue\":\"\xfe\",\"payload\":null}", false, 400, "invalid JSON: invalid UTF-8"},
		{"QueueMsgPack", "POST", "/jobs", map[string]any{"type": "t", "queue": "\xfe", "payload": nil}, true, 400, "invalid MessagePack: string is not valid UTF-8"},
		{"PatchQueue", "PATCH", "/jobs/{job}", "{\"queue\":\"b\xff\"}", false, 400, "invalid JSON: invalid UTF-8"},
	})
}

// TestRefuse_PatchTypes: a PATCH member of the wrong JSON type is named
// with the type it must have, not a Go type; a body that is not an object
// says so.
func TestRefuse_PatchTypes(t *testing.T) {
	t.Parallel()
	rt := newRefuseTarget(t)
	rt.run(t, []refusal{
		{"PriorityString", "PATCH", "/jobs/{job}", `{"priority":"high"}`, false, 400, "invalid JSON: priority must be an integer 0..65535"},
		{"PriorityTooLarge", "PATCH", "/jobs/{job}", `{"priority":70000}`, false, 400, "invalid JSON: priority must be an integer 0..65535"},
		{"PriorityMsgPack", "PATCH", "/jobs/{job}", map[string]any{"priority": 1.5}, true, 400, "invalid MessagePack: priority must be an integer 0..65535"},
		{"Queue", "PATCH", "/jobs/{job}", `{"queue":5}`, false, 400, "invalid JSON: queue must be a string"},
		{"ReadyAt", "PATCH", "/jobs/{job}", `{"ready_at":-1}`, false, 400, "invalid JSON: ready_at must be a non-negative integer"},
		{"RetryLimit", "PATCH", "/jobs/{job}", `{"retry_limit":true}`, false, 400, "invalid JSON: retry_limit must be an integer 0..4294967295"},
		{"Retention", "PATCH", "/jobs/{job}", `{"retention":5}`, false, 400, "invalid JSON: retention must be an object"},
		{"RetentionMember", "PATCH", "/jobs/{job}", `{"retention":{"dead_ms":"1d"}}`, false, 400, "invalid JSON: retention.dead_ms must be a non-negative integer"},
		{"Backoff", "PATCH", "/jobs/{job}", `{"backoff":[1,2,3]}`, false, 400, "invalid JSON: backoff must be an object"},
		{"BackoffMember", "PATCH", "/jobs/{job}", `{"backoff":{"exponent":"x","base_ms":1,"jitter_ms":1}}`, false, 400, "invalid JSON: backoff.exponent must be a number"},
		{"BulkPriority", "PATCH", "/jobs?queue=a", `{"priority":"x"}`, false, 400, "invalid JSON: priority must be an integer 0..65535"},
		{"JobBodyArray", "PATCH", "/jobs/{job}", `[1]`, false, 400, "invalid JSON: body must be a JSON object"},
		{"JobBodyNull", "PATCH", "/jobs/{job}", `null`, false, 400, "invalid JSON: body must be a JSON object"},
		{"JobBodyString", "PATCH", "/jobs/{job}", `"x"`, false, 400, "invalid JSON: body must be a JSON object"},
		{"JobBodyMsgPack", "PATCH", "/jobs/{job}", []byte{0x91, 0x01}, true, 400, "invalid MessagePack: body must be a map"},
		{"BulkBodyArray", "PATCH", "/jobs?queue=a", `[]`, false, 400, "invalid JSON: body must be a JSON object"},
		{"Allocation", "PATCH", "/budgets/k", `{"allocation":"3"}`, false, 400, "invalid JSON: allocation must be an integer"},
		{"Strategy", "PATCH", "/budgets/k", `{"strategy":"time_based"}`, false, 400, "invalid JSON: strategy must be an object"},
		{"StrategyType", "PATCH", "/budgets/k", `{"strategy":{"type":1}}`, false, 400, "invalid JSON: strategy.type must be a string"},
		{"StrategyDuration", "PATCH", "/budgets/k", `{"strategy":{"duration_ms":"1s"}}`, false, 400, "invalid JSON: strategy.duration_ms must be an integer"},
		{"StrategyBurstMsgPack", "PATCH", "/budgets/k", map[string]any{"strategy": map[string]any{"burst": "x"}}, true, 400, "invalid MessagePack: strategy.burst must be an integer"},
		{"BudgetBodyArray", "PATCH", "/budgets/k", `[]`, false, 400, "invalid JSON: body must be a JSON object"},
	})
}

// TestRefuse_HugeHeaderIsJSON: a request header past the limit (here a
// 2 MiB budget key in the path, or a 2 MiB header) is answered 431 with a
// JSON error body like every other refusal, over HTTP/1.1 and h2c.
func TestRefuse_HugeHeaderIsJSON(t *testing.T) {
	t.Parallel()
	rt := newRefuseTarget(t)
	before := rt.state(t)
	huge := strings.Repeat("k", 2<<20)
	for _, c := range []struct {
		name   string
		client *http.Client
		path   string
		header []string
	}{
		{"PathHTTP1", rt.tb.h1, "/budgets/" + huge, nil},
		{"PathH2C", rt.tb.h2, "/budgets/" + huge, nil},
		{"HeaderHTTP1", rt.tb.h1, "/budgets/k", []string{"X-Pad", huge}},
		{"HeaderH2C", rt.tb.h2, "/budgets/k", []string{"X-Pad", huge}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rt.tb.reqWith(t, c.client, "PUT", c.path, `{"allocation":1,"strategy":{"type":"while_in_flight"}}`, c.header...)
			require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, r.status, "body: %.200s", r.body)
			require.Equal(t, "application/json", r.header.Get("Content-Type"))
			require.Equal(t, `{"error":"request header fields too large"}`, string(r.body))
		})
	}
	require.Equal(t, before, rt.state(t))
	// A long but acceptable key still works.
	rt.tb.budPut(t, strings.Repeat("k", 64<<10), `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
}
