package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// Helpers shared by the core job API tests (jobs, take, bad input, restart).

// msNow is the client's clock in milliseconds; the server runs on the same
// machine and the real clock.
func msNow() uint64 { return uint64(time.Now().UnixMilli()) }

// fieldsOf decodes a JSON object body into its raw members, so tests can
// assert which keys are present.
func fieldsOf(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &m), "body: %s", body)
	return m
}

// jobByID reads a job with GET /jobs/{id}, requiring 200.
func jobByID(t *testing.T, tb *testBundle, id string) api.Job {
	t.Helper()
	r := tb.req(t, "GET", "/jobs/"+id, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var j api.Job
	r.json(t, &j)
	return j
}

// requireGone asserts that GET /jobs/{id} answers 404 job not found.
func requireGone(t *testing.T, tb *testBundle, id string) {
	t.Helper()
	r := tb.req(t, "GET", "/jobs/"+id, nil)
	require.Equal(t, http.StatusNotFound, r.status, "body: %s", r.body)
	require.JSONEq(t, `{"error":"job not found"}`, string(r.body))
}

// jobCount answers GET /jobs/count?query.
func jobCount(t *testing.T, tb *testBundle, query string) int64 {
	t.Helper()
	r := tb.req(t, "GET", "/jobs/count?"+query, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var c api.Count
	r.json(t, &c)
	return c.Count
}

// listJobs answers GET path (a /jobs listing), requiring 200.
func listJobs(t *testing.T, tb *testBundle, path string) api.JobList {
	t.Helper()
	r := tb.req(t, "GET", path, nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var l api.JobList
	r.json(t, &l)
	return l
}

func idsOf(jobs []api.Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

// ackJob acknowledges an in-flight job, requiring 204 with no body.
func ackJob(t *testing.T, tb *testBundle, id string) {
	t.Helper()
	r := tb.req(t, "POST", "/jobs/"+id+"/success", nil)
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	require.Empty(t, r.body)
}

// failJob reports a failure, requiring 200, and returns the job.
func failJob(t *testing.T, tb *testBundle, id, body string) api.Job {
	t.Helper()
	r := tb.req(t, "POST", "/jobs/"+id+"/failure", body)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.NotContains(t, fieldsOf(t, r.body), "payload")
	var j api.Job
	r.json(t, &j)
	return j
}

// eventually polls cond every 20 ms until it holds, failing after d.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statusOf reads a job's status ("" when it is gone).
func statusOf(t *testing.T, tb *testBundle, id string) string {
	t.Helper()
	r := tb.req(t, "GET", "/jobs/"+id, nil)
	if r.status == http.StatusNotFound {
		return ""
	}
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var j api.Job
	r.json(t, &j)
	return j.Status
}

// inFlightJob enqueues a job and takes it on a fresh stream (prefetch 1,
// kept open for the test), returning the job as delivered.
func inFlightJob(t *testing.T, tb *testBundle, body string) api.Job {
	t.Helper()
	j := tb.enqueue(t, body)
	ts := tb.take(t, "prefetch=1&queue="+url.QueryEscape(j.Queue))
	got := ts.next(t, 5*time.Second)
	require.Equal(t, j.ID, got.ID)
	return got
}

// completedJob makes a job that is kept for an hour after completion.
func completedJob(t *testing.T, tb *testBundle, queue string) api.Job {
	t.Helper()
	j := inFlightJob(t, tb, `{"type":"t","queue":"`+queue+`","payload":null,"retention":{"completed_ms":3600000}}`)
	ackJob(t, tb, j.ID)
	return jobByID(t, tb, j.ID)
}

func TestMisc_HealthAndVersion(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	r := tb.req(t, "GET", "/health", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, `{"status":"ok"}`, string(r.body))

	r = tb.req(t, "GET", "/version", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, `{"version":"0.7.0"}`, string(r.body))
}

func TestMisc_Stats(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	future := msNow() + 3_600_000
	tb.enqueue(t, `{"type":"t","queue":"a","payload":1}`)
	tb.enqueue(t, `{"type":"t","queue":"a","payload":2}`)
	tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"b","payload":3,"ready_at":%d}`, future))
	ts := tb.take(t, "queue=a")
	ts.next(t, 5*time.Second)

	r := tb.req(t, "GET", "/stats", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var st api.Stats
	r.json(t, &st)
	require.Equal(t, "0.7.0", st.Version)
	require.Equal(t, "leader", st.Role, "a lone server leads")
	require.Zero(t, st.Term)
	require.GreaterOrEqual(t, st.UptimeMs, int64(0))
	require.Equal(t, api.JobCounts{Scheduled: 1, Ready: 1, Parked: 0, InFlight: 1}, st.Jobs)
	require.Equal(t, []api.QueueStats{
		{Name: "a", Ready: 1, InFlight: 1},
		{Name: "b", Scheduled: 1},
	}, st.Queues)
	require.Empty(t, st.Budgets)
	for _, k := range []string{"role", "version", "uptime_ms", "rss_bytes", "jobs", "queues", "budgets"} {
		require.Contains(t, fieldsOf(t, r.body), k)
	}
}

func TestMisc_Queues(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	r := tb.req(t, "GET", "/queues", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, `{"queues":[]}`, string(r.body))

	for _, q := range []string{"emails", "Zeta", "billing", "emails"} {
		tb.enqueue(t, `{"type":"t","queue":"`+q+`","payload":null}`)
	}
	completedJob(t, tb, "done")
	dead := inFlightJob(t, tb, `{"type":"t","queue":"graveyard","payload":null}`)
	require.Equal(t, "dead", failJob(t, tb, dead.ID, `{"message":"boom","kill":true}`).Status)

	// A queue whose only job was deleted while ready is gone: the ready
	// jobs' queues come from the engine, which forgets it.
	gone := tb.enqueue(t, `{"type":"t","queue":"gone","payload":null}`)
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/jobs/"+gone.ID, nil).status)

	r = tb.req(t, "GET", "/queues", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, `{"queues":["Zeta","billing","done","emails","graveyard"]}`, string(r.body))

	// After a restart the engine holds the ready jobs again.
	tb.stop()
	tb = setupIn(t, tb.dir)
	r = tb.req(t, "GET", "/queues", nil)
	require.Equal(t, `{"queues":["Zeta","billing","done","emails","graveyard"]}`, string(r.body))
}

func TestEnqueue_Defaults(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	before := msNow()
	r := tb.req(t, "POST", "/jobs", `{"type":"send","queue":"emails","payload":{"b":1,"a":{"d":[3,1],"c":"x"},"big":18446744073709551615,"neg":-9223372036854775808,"f":1.5}}`)
	after := msNow()
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	f := fieldsOf(t, r.body)
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	require.ElementsMatch(t, []string{"id", "type", "queue", "priority", "status", "ready_at", "attempts", "duplicate", "folded"}, keys,
		"optional fields are omitted and payload is not echoed: %s", r.body)
	var j api.Job
	r.json(t, &j)
	require.Len(t, j.ID, 25)
	require.True(t, api.ValidJobID(j.ID))
	require.Equal(t, "send", j.Type)
	require.Equal(t, "emails", j.Queue)
	require.Equal(t, uint16(32768), j.Priority)
	require.Equal(t, "ready", j.Status)
	require.GreaterOrEqual(t, j.ReadyAt, before)
	require.LessOrEqual(t, j.ReadyAt, after)
	require.Zero(t, j.Attempts)
	require.Equal(t, "false", string(f["duplicate"]))
	require.Equal(t, "false", string(f["folded"]))

	r = tb.req(t, "GET", "/jobs/"+j.ID, nil)
	require.Equal(t, http.StatusOK, r.status)
	got := fieldsOf(t, r.body)
	require.Equal(t, `{"a":{"c":"x","d":[3,1]},"b":1,"big":18446744073709551615,"f":1.5,"neg":-9223372036854775808}`, string(got["payload"]),
		"keys sorted, 64-bit integers exact")
	require.NotContains(t, got, "duplicate")
	require.NotContains(t, got, "folded")
	require.NotContains(t, got, "dequeued_at")

	t.Run("OtherPayloads", func(t *testing.T) {
		for _, p := range []string{`null`, `"text"`, `[1,{"z":1,"y":2}]`, `42`, `true`, `"<b>&amp;</b>"`, `{"é":"ü"}`} {
			j := tb.enqueue(t, `{"type":"t","queue":"q","payload":`+p+`}`)
			r := tb.req(t, "GET", "/jobs/"+j.ID, nil)
			require.Equal(t, http.StatusOK, r.status)
			want := p
			if strings.HasPrefix(p, "[") {
				want = `[1,{"y":2,"z":1}]`
			}
			require.Equal(t, want, string(fieldsOf(t, r.body)["payload"]))
		}
	})

	t.Run("Overrides", func(t *testing.T) {
		j := tb.enqueue(t, `{"type":"t","queue":"q","payload":{},"priority":0,"retry_limit":3,`+
			`"backoff":{"exponent":2,"base_ms":10,"jitter_ms":0},"retention":{"dead_ms":60000}}`)
		require.Equal(t, uint16(0), j.Priority)
		require.Equal(t, uint32(3), *j.RetryLimit)
		require.Equal(t, &api.Backoff{Exponent: 2, BaseMs: 10, JitterMs: 0}, j.Backoff)
		require.Nil(t, j.Retention.CompletedMs)
		require.Equal(t, uint64(60000), *j.Retention.DeadMs)
		r := tb.req(t, "GET", "/jobs/"+j.ID, nil)
		require.JSONEq(t, `{"dead_ms":60000}`, string(fieldsOf(t, r.body)["retention"]))
	})

	t.Run("FutureReadyAt", func(t *testing.T) {
		at := msNow() + 3_600_000
		j := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":null,"ready_at":%d}`, at))
		require.Equal(t, "scheduled", j.Status)
		require.Equal(t, at, j.ReadyAt)
		require.Equal(t, "scheduled", jobByID(t, tb, j.ID).Status)
	})

	t.Run("PastReadyAt", func(t *testing.T) {
		j := tb.enqueue(t, `{"type":"t","queue":"q","payload":null,"ready_at":1000}`)
		require.Equal(t, "ready", j.Status)
		require.Equal(t, uint64(1000), j.ReadyAt, "a past ready_at is stored as sent")
	})
}

func TestEnqueue_Bulk(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[]}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	require.Equal(t, `{"jobs":[]}`, string(r.body))

	r = tb.req(t, "POST", "/jobs/bulk", `{"jobs":[{"type":"a","queue":"q","payload":{"x":1}},{"type":"b","queue":"r","payload":null,"priority":5}]}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var raw struct {
		Jobs []map[string]json.RawMessage `json:"jobs"`
	}
	r.json(t, &raw)
	require.Len(t, raw.Jobs, 2)
	for _, j := range raw.Jobs {
		require.NotContains(t, j, "payload")
		require.Equal(t, "false", string(j["duplicate"]))
		require.Equal(t, "false", string(j["folded"]))
	}
	var out api.BulkJobs
	r.json(t, &out)
	require.Equal(t, "a", out.Jobs[0].Type)
	require.Equal(t, "b", out.Jobs[1].Type)
	require.Equal(t, uint16(32768), out.Jobs[0].Priority)
	require.Equal(t, uint16(5), out.Jobs[1].Priority)
	require.Less(t, out.Jobs[0].ID, out.Jobs[1].ID)
	require.Equal(t, int64(2), jobCount(t, tb, ""))

	t.Run("Atomic", func(t *testing.T) {
		r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[{"type":"a","queue":"q","payload":1},{"type":"a","queue":"","payload":2},{"type":"a","queue":"q","payload":3}]}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, `{"error":"jobs[1]: queue must not be empty"}`, string(r.body))
		r = tb.req(t, "POST", "/jobs/bulk", `{"jobs":[{"type":"a","queue":"q","payload":1},{"type":"a","queue":"q"}]}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "jobs[1]: invalid JSON: missing field `payload`", r.errorText(t))
		require.Equal(t, int64(2), jobCount(t, tb, ""), "nothing of a refused bulk is stored")
	})
}

func TestAck_Success(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	j := inFlightJob(t, tb, `{"type":"t","queue":"q","payload":null}`)
	ackJob(t, tb, j.ID)
	requireGone(t, tb, j.ID) // completed_ms 0: deleted at once

	r := tb.req(t, "POST", "/jobs/"+j.ID+"/success", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, `{"error":"job not found in in-flight set"}`, string(r.body))

	ready := tb.enqueue(t, `{"type":"t","queue":"other","payload":null}`)
	r = tb.req(t, "POST", "/jobs/"+ready.ID+"/success", nil)
	require.Equal(t, http.StatusNotFound, r.status, "a ready job is not in flight")
	require.Equal(t, "ready", jobByID(t, tb, ready.ID).Status)
}

func TestAck_Bulk(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for i := range 3 {
		tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":%d}`, i))
	}
	ts := tb.take(t, "prefetch=3")
	a, b, c := ts.next(t, 5*time.Second), ts.next(t, 5*time.Second), ts.next(t, 5*time.Second)

	r := tb.req(t, "POST", "/jobs/success", `{"ids":["`+a.ID+`","`+b.ID+`"]}`)
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	require.Empty(t, r.body)
	requireGone(t, tb, a.ID)
	requireGone(t, tb, b.ID)

	missing := "0000000000000000000000000"
	r = tb.req(t, "POST", "/jobs/success", `{"ids":["`+c.ID+`","`+missing+`","`+a.ID+`"]}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, `{"not_found":["`+missing+`","`+a.ID+`"]}`, string(r.body), "exact shape, no error key")
	requireGone(t, tb, c.ID) // the valid one was still completed

	r = tb.req(t, "POST", "/jobs/success", `{"ids":[]}`)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, `{"error":"ids must not be empty"}`, string(r.body))
}

func TestFailure_Outcomes(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	t.Run("Backoff", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"backoff","payload":{"k":1}}`)
		before := msNow()
		got := failJob(t, tb, j.ID, `{"message":"boom","error_type":"RuntimeError","backtrace":"a.go:1"}`)
		after := msNow()
		require.Equal(t, "scheduled", got.Status)
		require.Equal(t, uint32(1), got.Attempts)
		require.GreaterOrEqual(t, got.FailedAt, before)
		require.LessOrEqual(t, got.FailedAt, after)
		require.Equal(t, j.DequeuedAt, got.DequeuedAt)
		// Default backoff, a=1: 1^4·1000 + 15000 + U[0,1)·30000·1.
		require.GreaterOrEqual(t, got.ReadyAt, got.FailedAt+16000)
		require.Less(t, got.ReadyAt, got.FailedAt+46000)

		r := tb.req(t, "GET", "/jobs/"+j.ID+"/errors", nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		require.Equal(t, fmt.Sprintf(`{"errors":[{"attempt":1,"message":"boom","error_type":"RuntimeError","backtrace":"a.go:1","dequeued_at":%d,"failed_at":%d}],`+
			`"pages":{"self":"/jobs/%s/errors?order=asc&limit=50","next":null,"prev":null}}`, j.DequeuedAt, got.FailedAt, j.ID), string(r.body))
		r = tb.req(t, "GET", "/jobs/"+j.ID+"/errors/1", nil)
		require.Equal(t, http.StatusOK, r.status)
		require.Equal(t, fmt.Sprintf(`{"attempt":1,"message":"boom","error_type":"RuntimeError","backtrace":"a.go:1","dequeued_at":%d,"failed_at":%d}`, j.DequeuedAt, got.FailedAt), string(r.body))
		r = tb.req(t, "GET", "/jobs/"+j.ID+"/errors/2", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, `{"error":"error record not found"}`, string(r.body))
		r = tb.req(t, "GET", "/jobs/"+j.ID+"/errors/first", nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		r.errorText(t)
		r = tb.req(t, "GET", "/jobs/0000000000000000000000000/errors", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, `{"error":"job not found"}`, string(r.body))
		r = tb.req(t, "GET", "/jobs/0000000000000000000000000/errors/1", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, `{"error":"job not found"}`, string(r.body))

		r = tb.req(t, "POST", "/jobs/"+j.ID+"/failure", `{"message":"again"}`)
		require.Equal(t, http.StatusNotFound, r.status, "no longer in flight")
		require.Equal(t, `{"error":"job not found in in-flight set"}`, string(r.body))
	})

	t.Run("RetryAtAndPages", func(t *testing.T) {
		j := tb.enqueue(t, `{"type":"t","queue":"retry","payload":null,"retry_limit":1}`)
		ts := tb.take(t, "queue=retry")
		require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
		// A past retry_at: scheduled, then promoted and redelivered at once.
		got := failJob(t, tb, j.ID, `{"message":"first","retry_at":1}`)
		require.Equal(t, uint64(1), got.ReadyAt)
		require.Equal(t, uint32(1), got.Attempts)
		again := ts.next(t, 5*time.Second)
		require.Equal(t, j.ID, again.ID)
		require.Equal(t, uint32(1), again.Attempts)
		got = failJob(t, tb, j.ID, `{"message":"second"}`)
		require.Equal(t, "dead", got.Status, "attempts 2 > retry_limit 1")
		require.Equal(t, uint32(2), got.Attempts)
		require.Equal(t, got.FailedAt+7*24*3600*1000, got.PurgeAt)

		r := tb.req(t, "GET", "/jobs/"+j.ID+"/errors?limit=1", nil)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var page api.ErrorList
		r.json(t, &page)
		require.Len(t, page.Errors, 1)
		require.Equal(t, "first", page.Errors[0].Message)
		require.NotContains(t, string(fieldsOf(t, r.body)["errors"]), "error_type", "unset error_type is omitted")
		require.Equal(t, "/jobs/"+j.ID+"/errors?order=asc&limit=1", page.Pages.Self)
		require.Nil(t, page.Pages.Prev)
		require.NotNil(t, page.Pages.Next)
		require.Equal(t, "/jobs/"+j.ID+"/errors?from=1&order=asc&limit=1", *page.Pages.Next)

		r = tb.req(t, "GET", *page.Pages.Next, nil)
		require.Equal(t, http.StatusOK, r.status)
		page = api.ErrorList{}
		r.json(t, &page)
		require.Len(t, page.Errors, 1)
		require.Equal(t, uint32(2), page.Errors[0].Attempt)
		require.Equal(t, "second", page.Errors[0].Message)
		require.Nil(t, page.Pages.Next)
		require.Equal(t, "/jobs/"+j.ID+"/errors?from=2&order=desc&limit=1", *page.Pages.Prev)

		r = tb.req(t, "GET", "/jobs/"+j.ID+"/errors?order=desc", nil)
		page = api.ErrorList{}
		r.json(t, &page)
		require.Equal(t, []uint32{2, 1}, []uint32{page.Errors[0].Attempt, page.Errors[1].Attempt})

		r = tb.req(t, "GET", "/jobs/"+j.ID+"/errors?bogus=1", nil)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Contains(t, r.errorText(t), "invalid query parameters: unknown field `bogus`")
	})

	t.Run("FutureRetryAt", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"later","payload":null,"retry_limit":0}`)
		at := msNow() + 3_600_000
		got := failJob(t, tb, j.ID, fmt.Sprintf(`{"message":"m","retry_at":%d}`, at))
		require.Equal(t, "scheduled", got.Status, "retry_at wins over the retry limit")
		require.Equal(t, at, got.ReadyAt)
	})

	t.Run("Kill", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"kill","payload":null}`)
		got := failJob(t, tb, j.ID, `{"message":"fatal","kill":true}`)
		require.Equal(t, "dead", got.Status)
		require.Equal(t, uint32(1), got.Attempts)
		require.NotZero(t, got.PurgeAt)
		require.Equal(t, "dead", jobByID(t, tb, j.ID).Status)
	})

	t.Run("RetryLimitZero", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"limit0","payload":null,"retry_limit":0}`)
		require.Equal(t, "dead", failJob(t, tb, j.ID, `{"message":"once"}`).Status)
	})

	t.Run("DeadNotRetained", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"gone","payload":null,"retention":{"dead_ms":0}}`)
		require.Equal(t, "dead", failJob(t, tb, j.ID, `{"message":"m","kill":true}`).Status)
		requireGone(t, tb, j.ID)
	})

	t.Run("BadBody", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"bad","payload":null}`)
		r := tb.req(t, "POST", "/jobs/"+j.ID+"/failure", `{"kill":true}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Equal(t, "invalid JSON: missing field `message`", r.errorText(t))
		require.Equal(t, "in_flight", jobByID(t, tb, j.ID).Status)
		r = tb.req(t, "POST", "/jobs/0000000000000000000000000/failure", `{"message":"m"}`)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, `{"error":"job not found in in-flight set"}`, string(r.body))
	})
}

func TestRetention_Completed(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	t.Run("Kept", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"kept","payload":{"a":1},"retention":{"completed_ms":300}}`)
		ackJob(t, tb, j.ID)
		r := tb.req(t, "GET", "/jobs/"+j.ID, nil)
		if r.status == http.StatusOK { // else the machine was slow enough for 300 ms to pass
			var got api.Job
			r.json(t, &got)
			require.Equal(t, "completed", got.Status)
			require.NotZero(t, got.CompletedAt)
			require.Equal(t, got.CompletedAt+300, got.PurgeAt)
			require.JSONEq(t, `{"a":1}`, string(got.Payload))
		}
		eventually(t, 5*time.Second, func() bool { return statusOf(t, tb, j.ID) == "" }, "completed job purged")
		require.Zero(t, jobCount(t, tb, "queue=kept"))
		require.Empty(t, listJobs(t, tb, "/jobs?status=completed&queue=kept").Jobs)
	})

	t.Run("KeptLong", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"long","payload":null,"retention":{"completed_ms":3600000}}`)
		ackJob(t, tb, j.ID)
		got := jobByID(t, tb, j.ID)
		require.Equal(t, "completed", got.Status)
		require.Equal(t, got.CompletedAt+3600000, got.PurgeAt)
		require.Equal(t, []string{j.ID}, idsOf(listJobs(t, tb, "/jobs?status=completed").Jobs))
	})

	t.Run("DefaultDeletes", func(t *testing.T) {
		j := inFlightJob(t, tb, `{"type":"t","queue":"default","payload":null}`)
		ackJob(t, tb, j.ID)
		requireGone(t, tb, j.ID)
		require.Zero(t, jobCount(t, tb, "queue=default"))
	})
}

func TestList_Filters(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	far := msNow() + 3_600_000
	a1 := tb.enqueue(t, `{"type":"send","queue":"a","payload":{"n":1},"priority":1}`)
	a2 := tb.enqueue(t, `{"type":"recv","queue":"a","payload":{"n":3},"priority":5}`)
	b1 := tb.enqueue(t, `{"type":"send","queue":"b","payload":{"n":5},"priority":9}`)
	c1 := tb.enqueue(t, fmt.Sprintf(`{"type":"send","queue":"c","payload":"not an object","ready_at":%d}`, far))
	fl := inFlightJob(t, tb, `{"type":"work","queue":"d","payload":{"n":4},"priority":100}`)
	// A job that failed once and waits for its retry.
	failed := inFlightJob(t, tb, `{"type":"work","queue":"e","payload":{"n":0}}`)
	failJob(t, tb, failed.ID, fmt.Sprintf(`{"message":"m","retry_at":%d}`, far))

	cases := []struct {
		query string
		want  []string
	}{
		{"", []string{a1.ID, a2.ID, b1.ID, c1.ID, fl.ID, failed.ID}},
		{"id=" + a2.ID + "," + b1.ID, []string{a2.ID, b1.ID}},
		{"queue=a", []string{a1.ID, a2.ID}},
		{"queue=b,a", []string{a1.ID, a2.ID, b1.ID}},
		{"queue=a&queue=c", []string{a1.ID, a2.ID, c1.ID}},
		{"queue=", []string{a1.ID, a2.ID, b1.ID, c1.ID, fl.ID, failed.ID}},
		{"type=send", []string{a1.ID, b1.ID, c1.ID}},
		{"type=send&queue=a", []string{a1.ID}},
		{"status=ready", []string{a1.ID, a2.ID, b1.ID}},
		{"status=scheduled", []string{c1.ID, failed.ID}},
		{"status=in_flight", []string{fl.ID}},
		{"status=ready,in_flight", []string{a1.ID, a2.ID, b1.ID, fl.ID}},
		{"priority=5", []string{a2.ID}},
		{"priority=1..9", []string{a1.ID, a2.ID, b1.ID}},
		{"priority=..5", []string{a1.ID, a2.ID}},
		{"priority=10..", []string{c1.ID, fl.ID, failed.ID}},
		{"priority=..", []string{a1.ID, a2.ID, b1.ID, c1.ID, fl.ID, failed.ID}},
		{fmt.Sprintf("ready_at=%d", far), []string{c1.ID, failed.ID}},
		{fmt.Sprintf("ready_at=..%d", far-1), []string{a1.ID, a2.ID, b1.ID, fl.ID}},
		{"attempts=1..", []string{failed.ID}},
		{"attempts=0", []string{a1.ID, a2.ID, b1.ID, c1.ID, fl.ID}},
		{"filter=" + url.QueryEscape(".n > 2"), []string{a2.ID, b1.ID, fl.ID}},
		{"filter=" + url.QueryEscape(".n > 2") + "&queue=a", []string{a2.ID}},
		{"filter=" + url.QueryEscape(`type == "string"`), []string{c1.ID}},
		{"filter=" + url.QueryEscape(".missing"), []string{}},
	}
	for _, c := range cases {
		got := listJobs(t, tb, "/jobs?"+c.query)
		require.Equal(t, c.want, idsOf(got.Jobs), "GET /jobs?%s", c.query)
		require.Equal(t, int64(len(c.want)), jobCount(t, tb, c.query), "GET /jobs/count?%s", c.query)
	}

	// Listings carry the payload; the in-flight job shows its live fields.
	l := listJobs(t, tb, "/jobs?id="+fl.ID)
	require.JSONEq(t, `{"n":4}`, string(l.Jobs[0].Payload))
	require.Equal(t, "in_flight", l.Jobs[0].Status)
	require.Equal(t, fl.DequeuedAt, l.Jobs[0].DequeuedAt)

	r := tb.req(t, "GET", "/jobs?filter="+url.QueryEscape(".n >"), nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.True(t, strings.HasPrefix(r.errorText(t), "invalid filter: "), "body: %s", r.body)
	r = tb.req(t, "GET", "/jobs/count?filter="+url.QueryEscape("{"), nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.True(t, strings.HasPrefix(r.errorText(t), "invalid filter: "), "body: %s", r.body)
}

func TestList_OrderLimitPages(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"p","payload":%d}`, i)).ID)
	}
	tb.enqueue(t, `{"type":"t","queue":"other","payload":null}`)

	r := tb.req(t, "GET", "/jobs?queue=other", nil)
	require.Equal(t, http.StatusOK, r.status)
	pages := fieldsOf(t, fieldsOf(t, r.body)["pages"])
	require.Equal(t, `"/jobs?order=asc&limit=50&queue=other"`, string(pages["self"]))
	require.Equal(t, "null", string(pages["next"]), "next is present and null")
	require.Equal(t, "null", string(pages["prev"]), "prev is present and null")

	desc := listJobs(t, tb, "/jobs?queue=p&order=desc")
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, idsOf(desc.Jobs))
	require.Equal(t, "/jobs?order=desc&limit=50&queue=p", desc.Pages.Self)

	// Follow next links to the end.
	p1 := listJobs(t, tb, "/jobs?queue=p&limit=2")
	require.Equal(t, ids[:2], idsOf(p1.Jobs))
	require.Equal(t, "/jobs?order=asc&limit=2&queue=p", p1.Pages.Self)
	require.Nil(t, p1.Pages.Prev, "no prev without from")
	require.Equal(t, "/jobs?from="+ids[1]+"&order=asc&limit=2&queue=p", *p1.Pages.Next)

	p2 := listJobs(t, tb, *p1.Pages.Next)
	require.Equal(t, ids[2:4], idsOf(p2.Jobs))
	require.Equal(t, *p1.Pages.Next, p2.Pages.Self)
	require.Equal(t, "/jobs?from="+ids[3]+"&order=asc&limit=2&queue=p", *p2.Pages.Next)
	require.Equal(t, "/jobs?from="+ids[2]+"&order=desc&limit=2&queue=p", *p2.Pages.Prev)

	p3 := listJobs(t, tb, *p2.Pages.Next)
	require.Equal(t, ids[4:], idsOf(p3.Jobs))
	require.Nil(t, p3.Pages.Next)
	require.Equal(t, "/jobs?from="+ids[4]+"&order=desc&limit=2&queue=p", *p3.Pages.Prev)

	back := listJobs(t, tb, *p3.Pages.Prev)
	require.Equal(t, []string{ids[3], ids[2]}, idsOf(back.Jobs), "a prev page comes in reverse order")

	// A page after the last row is empty: no next, no prev.
	empty := listJobs(t, tb, "/jobs?queue=p&from="+ids[4])
	require.Empty(t, empty.Jobs)
	require.Nil(t, empty.Pages.Next)
	require.Nil(t, empty.Pages.Prev)

	// Filters appear in the links in their fixed order, lists sorted.
	l := listJobs(t, tb, "/jobs?filter="+url.QueryEscape(".n > 2")+"&priority=1..&queue=p,other&status=ready,scheduled&limit=1")
	require.Equal(t, "/jobs?order=asc&limit=1&status=scheduled,ready&queue=other,p&priority=1..&filter=.n%20%3E%202", l.Pages.Self)

	r = tb.req(t, "GET", "/jobs?limit=0", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, `{"error":"limit must be between 1 and 2000"}`, string(r.body))
	r = tb.req(t, "GET", "/jobs?limit=2001", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, `{"error":"limit must be between 1 and 2000"}`, string(r.body))
	require.Len(t, listJobs(t, tb, "/jobs?limit=2000").Jobs, 6)
}

func TestCount_RejectsPaging(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.enqueue(t, `{"type":"t","queue":"q","payload":null}`)
	require.Equal(t, int64(1), jobCount(t, tb, ""))
	r := tb.req(t, "GET", "/jobs/count", nil)
	require.Equal(t, `{"count":1}`, string(r.body))
	for _, q := range []string{"limit=1", "order=asc", "from=0000000000000000000000000"} {
		r := tb.req(t, "GET", "/jobs/count?"+q, nil)
		require.Equal(t, http.StatusBadRequest, r.status, q)
		key, _, _ := strings.Cut(q, "=")
		require.Contains(t, r.errorText(t), "invalid query parameters: unknown field `"+key+"`")
	}
}

func TestDelete_Job(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	ready := tb.enqueue(t, `{"type":"t","queue":"r","payload":null}`)
	r := tb.req(t, "DELETE", "/jobs/"+ready.ID, nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)
	requireGone(t, tb, ready.ID)
	r = tb.req(t, "DELETE", "/jobs/"+ready.ID, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, `{"error":"job not found"}`, string(r.body))

	sched := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"s","payload":null,"ready_at":%d}`, msNow()+3_600_000))
	r = tb.req(t, "DELETE", "/jobs/"+sched.ID, nil)
	require.Equal(t, http.StatusNoContent, r.status)
	requireGone(t, tb, sched.ID)

	done := completedJob(t, tb, "c")
	r = tb.req(t, "DELETE", "/jobs/"+done.ID, nil)
	require.Equal(t, http.StatusNoContent, r.status)
	requireGone(t, tb, done.ID)

	dead := inFlightJob(t, tb, `{"type":"t","queue":"d","payload":null}`)
	failJob(t, tb, dead.ID, `{"message":"m","kill":true}`)
	r = tb.req(t, "DELETE", "/jobs/"+dead.ID, nil)
	require.Equal(t, http.StatusNoContent, r.status)
	requireGone(t, tb, dead.ID)

	t.Run("InFlight", func(t *testing.T) {
		first := tb.enqueue(t, `{"type":"t","queue":"f","payload":1}`)
		second := tb.enqueue(t, `{"type":"t","queue":"f","payload":2}`)
		ts := tb.take(t, "queue=f")
		require.Equal(t, first.ID, ts.next(t, 5*time.Second).ID)
		ts.none(t, 200*time.Millisecond)
		r := tb.req(t, "DELETE", "/jobs/"+first.ID, nil)
		require.Equal(t, http.StatusNoContent, r.status)
		require.Equal(t, second.ID, ts.next(t, 5*time.Second).ID, "deleting frees the stream's slot")
		r = tb.req(t, "POST", "/jobs/"+first.ID+"/success", nil)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, `{"error":"job not found in in-flight set"}`, string(r.body))
	})
}

func TestDelete_Filtered(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, q := range []string{"a", "a", "b", "c"} {
		tb.enqueue(t, `{"type":"t","queue":"`+q+`","payload":null}`)
	}
	r := tb.req(t, "DELETE", "/jobs?queue=a", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, `{"deleted":2}`, string(r.body))
	r = tb.req(t, "DELETE", "/jobs?queue=zzz", nil)
	require.Equal(t, `{"deleted":0}`, string(r.body))
	r = tb.req(t, "DELETE", "/jobs?limit=1", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Equal(t, int64(2), jobCount(t, tb, ""), "a refused bulk delete deletes nothing")
	r = tb.req(t, "DELETE", "/jobs", nil)
	require.Equal(t, `{"deleted":2}`, string(r.body))
	require.Zero(t, jobCount(t, tb, ""))
}

func TestPatch_Job(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	j := tb.enqueue(t, `{"type":"t","queue":"a","payload":{"x":1},"retention":{"completed_ms":100,"dead_ms":200}}`)

	patch := func(t *testing.T, body string) (api.Job, map[string]json.RawMessage) {
		t.Helper()
		r := tb.req(t, "PATCH", "/jobs/"+j.ID, body)
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		f := fieldsOf(t, r.body)
		require.NotContains(t, f, "payload")
		require.NotContains(t, f, "duplicate")
		require.NotContains(t, f, "folded")
		var out api.Job
		r.json(t, &out)
		return out, f
	}

	got, _ := patch(t, `{}`)
	require.Equal(t, "ready", got.Status)
	require.Equal(t, "a", got.Queue)

	got, _ = patch(t, `{"queue":"b","priority":7,"type":"ignored","payload":"ignored"}`)
	require.Equal(t, "b", got.Queue)
	require.Equal(t, uint16(7), got.Priority)
	require.Equal(t, "t", got.Type)
	require.JSONEq(t, `{"x":1}`, string(jobByID(t, tb, j.ID).Payload), "payload is immutable")
	require.Equal(t, []string{j.ID}, idsOf(listJobs(t, tb, "/jobs?queue=b").Jobs))

	future := msNow() + 3_600_000
	got, _ = patch(t, fmt.Sprintf(`{"ready_at":%d}`, future))
	require.Equal(t, "scheduled", got.Status)
	require.Equal(t, future, got.ReadyAt)
	require.Equal(t, "scheduled", jobByID(t, tb, j.ID).Status)

	before := msNow()
	got, _ = patch(t, `{"ready_at":null}`)
	require.Equal(t, "ready", got.Status)
	require.GreaterOrEqual(t, got.ReadyAt, before)
	require.LessOrEqual(t, got.ReadyAt, msNow())

	got, _ = patch(t, `{"ready_at":null}`)
	require.Equal(t, "ready", got.Status, "null on a ready job is a no-op")

	patch(t, fmt.Sprintf(`{"ready_at":%d}`, future))
	got, _ = patch(t, `{"ready_at":1000}`)
	require.Equal(t, "ready", got.Status, "a past ready_at makes a scheduled job ready")
	require.Equal(t, uint64(1000), got.ReadyAt)

	got, _ = patch(t, `{"retry_limit":4,"backoff":{"exponent":1.5,"base_ms":100,"jitter_ms":50}}`)
	require.Equal(t, uint32(4), *got.RetryLimit)
	require.Equal(t, &api.Backoff{Exponent: 1.5, BaseMs: 100, JitterMs: 50}, got.Backoff)
	got, f := patch(t, `{"retry_limit":null,"backoff":null}`)
	require.NotContains(t, f, "retry_limit")
	require.NotContains(t, f, "backoff")

	_, f = patch(t, `{"retention":{"dead_ms":null}}`)
	require.JSONEq(t, `{"completed_ms":100}`, string(f["retention"]), "retention is merged per field")
	_, f = patch(t, `{"retention":{"dead_ms":5}}`)
	require.JSONEq(t, `{"completed_ms":100,"dead_ms":5}`, string(f["retention"]))
	_, f = patch(t, `{"retention":null}`)
	require.NotContains(t, f, "retention")

	t.Run("Refusals", func(t *testing.T) {
		r := tb.req(t, "PATCH", "/jobs/"+j.ID, `{"queue":null}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, `{"error":"queue cannot be null"}`, string(r.body))
		r = tb.req(t, "PATCH", "/jobs/"+j.ID, `{"priority":null}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, `{"error":"priority cannot be null"}`, string(r.body))
		r = tb.req(t, "PATCH", "/jobs/"+j.ID, `{"queue":"x,y"}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, `{"error":"queue must not contain ','"}`, string(r.body))
		r = tb.req(t, "PATCH", "/jobs/"+j.ID, `{"queue":""}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, `{"error":"queue must not be empty"}`, string(r.body))
		r = tb.req(t, "PATCH", "/jobs/"+j.ID, `{"priority":"high"}`)
		require.Equal(t, http.StatusBadRequest, r.status)
		r.errorText(t)
		r = tb.req(t, "PATCH", "/jobs/0000000000000000000000000", `{"priority":1}`)
		require.Equal(t, http.StatusNotFound, r.status)
		require.Equal(t, `{"error":"job not found"}`, string(r.body))
		require.Equal(t, "b", jobByID(t, tb, j.ID).Queue, "refused patches change nothing")

		done := completedJob(t, tb, "c")
		r = tb.req(t, "PATCH", "/jobs/"+done.ID, `{"priority":1}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, `{"error":"cannot patch job `+done.ID+` in completed status"}`, string(r.body))

		dead := inFlightJob(t, tb, `{"type":"t","queue":"d","payload":null}`)
		failJob(t, tb, dead.ID, `{"message":"m","kill":true}`)
		r = tb.req(t, "PATCH", "/jobs/"+dead.ID, `{"priority":1}`)
		require.Equal(t, http.StatusUnprocessableEntity, r.status)
		require.Equal(t, `{"error":"cannot patch job `+dead.ID+` in dead status"}`, string(r.body))
	})

	t.Run("InFlight", func(t *testing.T) {
		fl := inFlightJob(t, tb, `{"type":"t","queue":"fl","payload":null}`)
		r := tb.req(t, "PATCH", "/jobs/"+fl.ID, fmt.Sprintf(`{"priority":3,"ready_at":%d}`, future))
		require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
		var got api.Job
		r.json(t, &got)
		require.Equal(t, "in_flight", got.Status, "an in-flight job only takes the data")
		require.Equal(t, uint16(3), got.Priority)
		require.Equal(t, future, got.ReadyAt)
		ackJob(t, tb, fl.ID)
	})
}

func TestPatch_Filtered(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	done := completedJob(t, tb, "a")
	a1 := tb.enqueue(t, `{"type":"t","queue":"a","payload":null}`)
	a2 := tb.enqueue(t, `{"type":"t","queue":"a","payload":null}`)
	b1 := tb.enqueue(t, `{"type":"t","queue":"b","payload":null}`)

	r := tb.req(t, "PATCH", "/jobs?queue=a", `{"priority":3}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.Equal(t, `{"patched":2}`, string(r.body), "terminal jobs are skipped")
	require.Equal(t, uint16(3), jobByID(t, tb, a1.ID).Priority)
	require.Equal(t, uint16(3), jobByID(t, tb, a2.ID).Priority)
	require.Equal(t, uint16(32768), jobByID(t, tb, b1.ID).Priority)
	require.Equal(t, uint16(32768), jobByID(t, tb, done.ID).Priority)

	r = tb.req(t, "PATCH", "/jobs?status=completed", `{"priority":1}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, `{"error":"cannot patch jobs in Completed status"}`, string(r.body))
	r = tb.req(t, "PATCH", "/jobs?status=ready,dead", `{"priority":1}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, `{"error":"cannot patch jobs in Dead status"}`, string(r.body))
	r = tb.req(t, "PATCH", "/jobs?limit=3", `{"priority":1}`)
	require.Equal(t, http.StatusBadRequest, r.status)
	r = tb.req(t, "PATCH", "/jobs", `{"queue":null}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, `{"error":"queue cannot be null"}`, string(r.body))
	require.Equal(t, uint16(32768), jobByID(t, tb, b1.ID).Priority, "refused patches change nothing")

	r = tb.req(t, "PATCH", "/jobs", `{"queue":"z"}`)
	require.Equal(t, `{"patched":3}`, string(r.body))
	require.Equal(t, int64(3), jobCount(t, tb, "queue=z"))
}

func TestReset_DeletesEverything(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.enqueue(t, `{"type":"t","queue":"a","payload":null}`)
	tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"b","payload":null,"ready_at":%d}`, msNow()+3_600_000))
	fl := inFlightJob(t, tb, `{"type":"t","queue":"c","payload":null}`)
	completedJob(t, tb, "d")

	r := tb.req(t, "POST", "/reset", nil)
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	require.Empty(t, r.body)
	require.Zero(t, jobCount(t, tb, ""))
	r = tb.req(t, "GET", "/queues", nil)
	require.Equal(t, `{"queues":[]}`, string(r.body))
	r = tb.req(t, "POST", "/jobs/"+fl.ID+"/success", nil)
	require.Equal(t, http.StatusNotFound, r.status, "the worker of a reset job gets 404")
	var st api.Stats
	tb.req(t, "GET", "/stats", nil).json(t, &st)
	require.Equal(t, api.JobCounts{}, st.Jobs)
}

// mpReq sends a MessagePack request (v encoded with api.Marshal, nil for no
// body) asking for a MessagePack response.
func mpReq(t *testing.T, tb *testBundle, c *http.Client, method, path string, v any) reply {
	t.Helper()
	var body any
	hdr := []string{"Accept", "application/msgpack"}
	if v != nil {
		b, err := api.Marshal(api.MsgPack, v)
		require.NoError(t, err)
		body = b
		hdr = append(hdr, "Content-Type", "application/msgpack")
	}
	r := tb.reqWith(t, c, method, path, body, hdr...)
	if len(r.body) > 0 {
		require.Equal(t, "application/msgpack", r.header.Get("Content-Type"), "body: %q", r.body)
	}
	return r
}

// mpDecode decodes a MessagePack body.
func mpDecode(t *testing.T, body []byte, v any) {
	t.Helper()
	require.NoError(t, api.Unmarshal(api.MsgPack, body, v), "body: %q", body)
}

// mpFields decodes a MessagePack map body into its members (as JSON).
func mpFields(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	mpDecode(t, body, &m)
	return m
}

func TestMsgPack_Jobs(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	r := mpReq(t, tb, tb.h1, "GET", "/health", nil)
	require.Equal(t, http.StatusOK, r.status)
	var h api.Health
	mpDecode(t, r.body, &h)
	require.Equal(t, "ok", h.Status)
	require.Equal(t, byte(0x81), r.body[0], "a one-entry fixmap")

	r = mpReq(t, tb, tb.h1, "GET", "/version", nil)
	var v api.Version
	mpDecode(t, r.body, &v)
	require.Equal(t, "0.7.0", v.Version)

	req := api.EnqueueRequest{
		Type: api.Ptr("send"), Queue: api.Ptr("mp"), Priority: api.Ptr(uint16(7)),
		Payload: api.Payload(`{"b":[1,"x"],"a":18446744073709551615}`),
	}
	r = mpReq(t, tb, tb.h1, "POST", "/jobs", req)
	require.Equal(t, http.StatusCreated, r.status, "body: %q", r.body)
	f := mpFields(t, r.body)
	require.NotContains(t, f, "payload")
	require.Equal(t, "false", string(f["duplicate"]))
	require.Equal(t, "false", string(f["folded"]))
	var j api.Job
	mpDecode(t, r.body, &j)
	require.Equal(t, "send", j.Type)
	require.Equal(t, uint16(7), j.Priority)
	require.Equal(t, "ready", j.Status)

	r = mpReq(t, tb, tb.h1, "GET", "/jobs/"+j.ID, nil)
	require.Equal(t, http.StatusOK, r.status)
	f = mpFields(t, r.body)
	require.Equal(t, `{"a":18446744073709551615,"b":[1,"x"]}`, string(f["payload"]))
	// The same job read as JSON.
	require.Equal(t, `{"a":18446744073709551615,"b":[1,"x"]}`, string(fieldsOf(t, tb.req(t, "GET", "/jobs/"+j.ID, nil).body)["payload"]))

	r = mpReq(t, tb, tb.h1, "POST", "/jobs/bulk", api.BulkEnqueueRequest{Jobs: []api.EnqueueRequest{
		{Type: api.Ptr("a"), Queue: api.Ptr("mp"), Payload: api.Payload(`1`)},
		{Type: api.Ptr("b"), Queue: api.Ptr("mp"), Payload: api.Payload(`null`)},
	}})
	require.Equal(t, http.StatusCreated, r.status, "body: %q", r.body)
	var bulk api.BulkJobs
	mpDecode(t, r.body, &bulk)
	require.Len(t, bulk.Jobs, 2)

	r = mpReq(t, tb, tb.h1, "GET", "/jobs?queue=mp&limit=2", nil)
	require.Equal(t, http.StatusOK, r.status)
	var l api.JobList
	mpDecode(t, r.body, &l)
	require.Equal(t, []string{j.ID, bulk.Jobs[0].ID}, idsOf(l.Jobs))
	pages := fieldsOf(t, mpFields(t, r.body)["pages"])
	require.Equal(t, "null", string(pages["prev"]), "prev is present and nil in MessagePack too")
	require.Equal(t, `"/jobs?from=`+bulk.Jobs[0].ID+`&order=asc&limit=2&queue=mp"`, string(pages["next"]))

	r = mpReq(t, tb, tb.h1, "GET", "/jobs/count?queue=mp", nil)
	var c api.Count
	mpDecode(t, r.body, &c)
	require.Equal(t, int64(3), c.Count)

	r = mpReq(t, tb, tb.h1, "PATCH", "/jobs/"+j.ID, map[string]any{"priority": 3, "retention": map[string]any{"completed_ms": 60000}})
	require.Equal(t, http.StatusOK, r.status, "body: %q", r.body)
	f = mpFields(t, r.body)
	require.NotContains(t, f, "payload")
	require.Equal(t, "3", string(f["priority"]))
	require.JSONEq(t, `{"completed_ms":60000}`, string(f["retention"]))

	// Take, fail in MessagePack, read the error record back.
	ts := tb.take(t, "queue=mp&prefetch=3")
	for range 3 {
		ts.next(t, 5*time.Second)
	}
	r = mpReq(t, tb, tb.h1, "POST", "/jobs/"+j.ID+"/failure", api.FailureRequest{Message: api.Ptr("bad"), Kill: api.Ptr(true)})
	require.Equal(t, http.StatusOK, r.status, "body: %q", r.body)
	f = mpFields(t, r.body)
	require.NotContains(t, f, "payload")
	require.Equal(t, `"dead"`, string(f["status"]))
	r = mpReq(t, tb, tb.h1, "GET", "/jobs/"+j.ID+"/errors/1", nil)
	var rec api.ErrorRecord
	mpDecode(t, r.body, &rec)
	require.Equal(t, "bad", rec.Message)

	r = mpReq(t, tb, tb.h1, "POST", "/jobs/success", api.AckIDs{IDs: []string{bulk.Jobs[0].ID, "0000000000000000000000000"}})
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	var nf api.NotFound
	mpDecode(t, r.body, &nf)
	require.Equal(t, []string{"0000000000000000000000000"}, nf.NotFound)
	require.NotContains(t, mpFields(t, r.body), "error")

	r = mpReq(t, tb, tb.h1, "POST", "/jobs/"+bulk.Jobs[1].ID+"/success", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)

	// Errors come in MessagePack too.
	r = mpReq(t, tb, tb.h1, "GET", "/jobs/"+bulk.Jobs[1].ID, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	var e api.Error
	mpDecode(t, r.body, &e)
	require.Equal(t, "job not found", e.Error)
	r = mpReq(t, tb, tb.h1, "POST", "/jobs", api.EnqueueRequest{Type: api.Ptr("t"), Queue: api.Ptr("q")})
	require.Equal(t, http.StatusBadRequest, r.status)
	mpDecode(t, r.body, &e)
	require.Equal(t, "invalid MessagePack: missing field `payload`", e.Error)

	r = mpReq(t, tb, tb.h1, "DELETE", "/jobs?queue=mp", nil)
	var d api.Deleted
	mpDecode(t, r.body, &d)
	require.Equal(t, int64(1), d.Deleted, "only the dead job is left")
}

func TestNegotiation_AcceptAndContentType(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	r := tb.req(t, "GET", "/version", nil, "Accept", "application/json, application/msgpack")
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "application/msgpack", r.header.Get("Content-Type"))
	var v api.Version
	mpDecode(t, r.body, &v)
	require.Equal(t, "0.7.0", v.Version)

	for _, accept := range []string{"application/json", "*/*", "text/html, */*;q=0.8"} {
		r = tb.req(t, "GET", "/version", nil, "Accept", accept)
		require.Equal(t, http.StatusOK, r.status, accept)
		require.Equal(t, "application/json", r.header.Get("Content-Type"), accept)
	}

	const notAcceptable = `{"error":"not acceptable","supported":["application/json","application/msgpack"]}`
	for _, accept := range []string{"text/html", "application/*"} {
		r = tb.req(t, "GET", "/version", nil, "Accept", accept)
		require.Equal(t, http.StatusNotAcceptable, r.status, accept)
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.Equal(t, notAcceptable, string(r.body))
	}
	r = tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":null}`, "Accept", "text/html")
	require.Equal(t, http.StatusNotAcceptable, r.status)
	require.Equal(t, notAcceptable, string(r.body))
	require.Zero(t, jobCount(t, tb, ""), "a 406 stores nothing")

	const unsupported = `{"error":"unsupported media type","supported":["application/json","application/msgpack"]}`
	r = tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":null}`, "Content-Type", "text/plain")
	require.Equal(t, http.StatusUnsupportedMediaType, r.status)
	require.Equal(t, unsupported, string(r.body))
	r = tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":null}`, "Content-Type", "text/plain", "Accept", "application/msgpack")
	require.Equal(t, http.StatusUnsupportedMediaType, r.status)
	require.Equal(t, "application/msgpack", r.header.Get("Content-Type"), "the 415 body follows Accept")
	var e api.Error
	mpDecode(t, r.body, &e)
	require.Equal(t, api.Error{Error: "unsupported media type", Supported: api.SupportedFormats}, e)
	require.Zero(t, jobCount(t, tb, ""))
}

func TestHTTP2_Jobs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	h2 := func(t *testing.T, method, path string, body any, header ...string) reply {
		t.Helper()
		r := tb.reqWith(t, tb.h2, method, path, body, header...)
		require.Equal(t, "HTTP/2.0", r.proto)
		return r
	}

	r := h2(t, "GET", "/health", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, `{"status":"ok"}`, string(r.body))

	r = h2(t, "POST", "/jobs", `{"type":"t","queue":"h2","payload":{"b":2,"a":1}}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var j api.Job
	r.json(t, &j)
	r = h2(t, "POST", "/jobs/bulk", `{"jobs":[{"type":"t","queue":"h2","payload":2},{"type":"t","queue":"h2","payload":3}]}`)
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var bulk api.BulkJobs
	r.json(t, &bulk)

	r = h2(t, "GET", "/jobs/"+j.ID, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, `{"a":1,"b":2}`, string(fieldsOf(t, r.body)["payload"]))
	r = h2(t, "GET", "/jobs?queue=h2", nil)
	require.Equal(t, http.StatusOK, r.status)
	r = h2(t, "GET", "/jobs/"+j.ID, nil, "Accept", "application/msgpack")
	require.Equal(t, "application/msgpack", r.header.Get("Content-Type"))

	ts := takeWith(t, tb, tb.h2, "queue=h2&prefetch=3")
	require.Equal(t, "HTTP/2.0", ts.resp.Proto)
	require.Equal(t, "application/x-ndjson", ts.resp.Header.Get("Content-Type"))
	got := []string{ts.next(t, 5*time.Second).ID, ts.next(t, 5*time.Second).ID, ts.next(t, 5*time.Second).ID}
	require.Equal(t, []string{j.ID, bulk.Jobs[0].ID, bulk.Jobs[1].ID}, got)

	r = h2(t, "POST", "/jobs/"+j.ID+"/success", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)
	r = h2(t, "POST", "/jobs/success", `{"ids":["`+bulk.Jobs[0].ID+`"]}`)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)
	r = h2(t, "POST", "/jobs/"+bulk.Jobs[1].ID+"/failure", `{"message":"m","retry_at":1}`)
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, bulk.Jobs[1].ID, ts.next(t, 5*time.Second).ID, "redelivered on the same h2 stream")
	r = h2(t, "PATCH", "/jobs/"+bulk.Jobs[1].ID, `{"priority":1}`)
	require.Equal(t, http.StatusOK, r.status)
	r = h2(t, "DELETE", "/jobs/"+bulk.Jobs[1].ID, nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)
	r = h2(t, "POST", "/reset", nil)
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)

	r = h2(t, "GET", "/jobs/"+j.ID, nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, `{"error":"job not found"}`, string(r.body))
	r = h2(t, "GET", "/nope", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.Equal(t, `{"error":"not found"}`, string(r.body))
	r = h2(t, "PUT", "/jobs", nil)
	require.Equal(t, http.StatusMethodNotAllowed, r.status)
	require.Equal(t, `{"error":"method not allowed"}`, string(r.body))
	r = h2(t, "GET", "/version", nil, "Accept", "text/html")
	require.Equal(t, http.StatusNotAcceptable, r.status)
}
