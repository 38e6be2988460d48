package server_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// Adaptive budgets over HTTP (issue 26 §2).

// TestAdaptiveRealtime_BacksOffAndRecovers: a 100/s budget (burst 1, so
// that the rate is the pace) whose upstream refuses once halves its
// observed rate within a second, and climbs back to at least 95% of the
// configured rate once recover_ms has passed. Rates are measured on the
// server's dispatch times.
func TestAdaptiveRealtime_BacksOffAndRecovers(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "api", `{"allocation":100,"strategy":{"type":"time_based","duration_ms":1000,"burst":1},
		"adaptive":{"decrease":0.5,"recover_ms":2000,"floor":0.1}}`)
	tb.budJobs(t, 700, "q", `[{"key":"api"}]`)
	var mu sync.Mutex
	var at []int64
	f := budNewFleet(t, tb)
	f.worker("prefetch=0", func(fr budFrame) {
		mu.Lock()
		at = append(at, fr.dispatchedAt())
		mu.Unlock()
		f.spawn(func() { f.ack(fr.job.ID) })
	})
	count := func(from, to int64) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, t := range at {
			if t >= from && t < to {
				n++
			}
		}
		return n
	}
	time.Sleep(700 * time.Millisecond) // at full pace
	r := tb.req(t, "POST", "/budgets/api/throttle", `{"retry_after_ms":0}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var b api.Budget
	r.json(t, &b)
	require.NotNil(t, b.State)
	require.Equal(t, 50.0, *b.State.EffectiveAllocation)
	require.Equal(t, int64(1), *b.State.Throttles)
	refused := time.Now().UnixMilli()

	// Within the next second the pace is at most the climb's: it starts
	// at 50/s and is at 75/s a second later, so at most 62.5 + 1 jobs;
	// before the refusal the pace was 100/s.
	time.Sleep(1100 * time.Millisecond)
	before := count(refused-500, refused)
	after := count(refused+50, refused+1050)
	require.GreaterOrEqual(t, before, 45, "full pace before: %d in 500 ms", before)
	require.LessOrEqual(t, after, 64, "halved after the refusal: %d in the next second", after)

	// recover_ms (2 s) after the refusal, the budget pays its configured
	// rate again: at least 95 in a second (the pace is exact, so the
	// bound only absorbs a late timer or two).
	for time.Now().UnixMilli() < refused+3200 {
		time.Sleep(50 * time.Millisecond)
	}
	back := count(refused+2100, refused+3100)
	require.GreaterOrEqual(t, back, 95, "recovered: %d in a second", back)
	require.LessOrEqual(t, back, 101)
	st := tb.budState(t, "api")
	require.Equal(t, 100.0, *st.EffectiveAllocation)
}

// TestAdaptiveHTTP_FailureThrottle: a failure's throttle names one of the
// job's budgets; its retry_after stops the budget; why says so; the job
// is retried without counting.
func TestAdaptiveHTTP_FailureThrottle(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "api", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000},"adaptive":{}}`)
	b := tb.budGet(t, "api", false)
	require.Equal(t, &api.Adaptive{Decrease: 0.5, RecoverMs: 60000, Floor: 0.05}, b.Adaptive, "the defaults")
	jobs := tb.budJobs(t, 2, "q", `[{"key":"api"}]`)
	ts := tb.take(t, "prefetch=1")
	first := ts.next(t, budArrives)
	require.Equal(t, jobs[0].ID, first.ID)

	budError(t, tb.req(t, "POST", "/jobs/"+first.ID+"/failure", `{"message":"429","throttle":{"budget":"other"}}`),
		422, "job "+first.ID+" is not bound to budget 'other': throttle.budget must name one of its budgets")
	budError(t, tb.req(t, "POST", "/jobs/"+first.ID+"/failure", `{"message":"429","throttle":{}}`),
		400, "throttle.budget is required: the budget whose upstream refused")
	budError(t, tb.req(t, "POST", "/jobs/"+first.ID+"/failure", `{"message":"429","throttle":{"budget":"api","retry_after_ms":-1}}`),
		400, "throttle.retry_after_ms must be at least 0")
	require.Equal(t, int64(0), *tb.budState(t, "api").Throttles, "nothing counted yet")

	r := tb.req(t, "POST", "/jobs/"+first.ID+"/failure", `{"message":"429","retry_at":1,"throttle":{"budget":"api","retry_after_ms":30000}}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	st := tb.budState(t, "api")
	require.Equal(t, int64(1), *st.Throttles)
	require.Equal(t, 5.0, *st.EffectiveAllocation)
	require.NotNil(t, st.ThrottledUntil)
	require.InDelta(t, time.Now().UnixMilli()+30000, *st.ThrottledUntil, 2000)
	ts.none(t, 300*time.Millisecond)
	w := tb.budWhy(t, jobs[1].ID)
	require.Equal(t, "budget", w.WaitingFor)
	require.Contains(t, w.Reason, "budget 'api' backs off after the upstream refused at")
	require.Contains(t, w.Reason, "(effective 5/s of 10/s)")
	require.Contains(t, w.Reason, "it pays nothing until")
	var f api.Forecast
	tb.req(t, "GET", "/budgets/api/forecast", nil).json(t, &f)
	require.True(t, f.BackingOff)
}

// TestAdaptiveHTTP_Refusals: bad adaptive bodies, and throttles of what
// does not exist.
func TestAdaptiveHTTP_Refusals(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, tc := range []struct{ body, msg string }{
		{`{"allocation":5,"strategy":{"type":"while_in_flight"},"adaptive":{"decrease":0}}`, "adaptive.decrease must be above 0 and below 1: 0"},
		{`{"allocation":5,"strategy":{"type":"while_in_flight"},"adaptive":{"decrease":1}}`, "adaptive.decrease must be above 0 and below 1: 1"},
		{`{"allocation":5,"strategy":{"type":"while_in_flight"},"adaptive":{"decrease":1.5}}`, "adaptive.decrease must be above 0 and below 1: 1.5"},
		{`{"allocation":5,"strategy":{"type":"while_in_flight"},"adaptive":{"floor":0}}`, "adaptive.floor must be above 0 and at most 1: 0"},
		{`{"allocation":5,"strategy":{"type":"while_in_flight"},"adaptive":{"recover_ms":0}}`, "adaptive.recover_ms must be at least 1"},
	} {
		budError(t, tb.req(t, "PUT", "/budgets/a", tc.body), 422, tc.msg)
	}
	require.Equal(t, http.StatusNotFound, tb.req(t, "GET", "/budgets/a", nil).status, "nothing was created")
	budError(t, tb.req(t, "POST", "/budgets/nope/throttle", nil), 404, "budget 'nope' not found")

	// PATCH merges field by field, and null removes the back-off.
	tb.budPut(t, "a", `{"allocation":5,"strategy":{"type":"while_in_flight"},"adaptive":{"decrease":0.25}}`)
	r := tb.req(t, "PATCH", "/budgets/a", `{"adaptive":{"floor":0.5}}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var b api.Budget
	r.json(t, &b)
	require.Equal(t, &api.Adaptive{Decrease: 0.25, RecoverMs: 60000, Floor: 0.5}, b.Adaptive)
	budError(t, tb.req(t, "PATCH", "/budgets/a", `{"adaptive":{"decrease":2}}`), 422, "adaptive.decrease must be above 0 and below 1: 2")
	r = tb.req(t, "PATCH", "/budgets/a", `{"adaptive":{"dcrease":0.3}}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "body: %s", r.body)
	r = tb.req(t, "PATCH", "/budgets/a", `{"adaptive":null}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	b = api.Budget{}
	r.json(t, &b)
	require.Nil(t, b.Adaptive)

	// A throttle of a budget without back-off still stops it for its
	// retry_after, and counts.
	r = tb.req(t, "POST", "/budgets/a/throttle", `{"retry_after_ms":1000}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	b = api.Budget{}
	r.json(t, &b)
	require.Equal(t, int64(1), *b.State.Throttles)
	require.Equal(t, 5.0, *b.State.EffectiveAllocation)
	require.NotNil(t, b.State.ThrottledUntil)
	budError(t, tb.req(t, "POST", "/budgets/a/throttle", `{"budget":"b"}`), 422, `budget is "b" but the path names "a": leave it out, or name the same budget`)
}

// TestAdaptiveHTTP_ChunkedEmptyBody: a body sent chunked and empty is no
// body (Go's client sends a POST with an empty reader so), for every
// endpoint whose body is optional.
func TestAdaptiveHTTP_ChunkedEmptyBody(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "a", `{"allocation":5,"strategy":{"type":"while_in_flight"}}`)
	j := tb.enqueue(t, `{"type":"t","queue":"q","payload":null}`)
	post := func(path string) int {
		// A reader the client cannot measure: sent chunked, Content-Length
		// unknown to the server.
		req, err := http.NewRequest("POST", tb.url+path, io.NopCloser(strings.NewReader("")))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := tb.h1.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post("/budgets/a/throttle"))
	require.Equal(t, int64(1), *tb.budState(t, "a").Throttles)
	require.Equal(t, http.StatusOK, post("/jobs/"+j.ID+"/budgets/a"), "a binding with the default cost")
}
