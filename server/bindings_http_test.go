package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/zizq/zizq/api"
)

// Binding management endpoints (docs/API.md §Binding management).

// budBindJob sends a single-job binding request and returns the job it
// answers, requiring 200.
func (tb *testBundle) budBindJob(t *testing.T, method, path string, body any) api.Job {
	t.Helper()
	r := tb.req(t, method, path, body)
	require.Equal(t, http.StatusOK, r.status, "%s %s: %s", method, path, r.body)
	var j api.Job
	r.json(t, &j)
	return j
}

// budJobBody is the exact rendering of a binding response: a job without
// payload, its bindings in order ("" for none).
func budJobBody(j api.Job, status, budgets string) string {
	s := fmt.Sprintf(`{"id":"%s","type":"t","queue":"%s","priority":32768,"status":"%s","ready_at":%d,"attempts":0`, j.ID, j.Queue, status, j.ReadyAt)
	if budgets != "" {
		s += `,"budgets":` + budgets
	}
	return s + "}"
}

func TestBindings_SingleJob(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "a", `{"allocation":5,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "b", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":3}}`)
	j := tb.budJob(t, "q", "")
	p := "/jobs/" + j.ID + "/budgets"

	// POST binds (cost 1 by default) and answers the job.
	r := tb.req(t, "POST", p+"/a", nil)
	budExact(t, r, http.StatusOK, budJobBody(j, "ready", `[{"key":"a","cost":1}]`), 0)
	budError(t, tb.req(t, "POST", p+"/a", `{"cost":2}`), http.StatusConflict, "job is already bound to budget 'a'")
	got := tb.budBindJob(t, "POST", p+"/b", `{"cost":2}`)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 1}, {Key: "b", Cost: 2}}, got.Budgets)

	// Validated like an enqueue binding.
	budError(t, tb.req(t, "POST", p+"/c", nil), http.StatusUnprocessableEntity, "budget 'c' does not exist")
	budError(t, tb.req(t, "POST", p+"/c", `{"cost":0}`), http.StatusBadRequest, "cost must be at least 1")
	budError(t, tb.req(t, "POST", p+"/c", `{"create_with":{"allocation":0,"strategy":{"type":"while_in_flight"}}}`), http.StatusBadRequest,
		"create_with: allocation must be at least 1")
	budError(t, tb.req(t, "POST", p+"/c*", nil), http.StatusBadRequest, "budget key must not contain '*' (reserved)")
	budError(t, tb.req(t, "POST", p+"/c", `{"cost":`), http.StatusBadRequest, "invalid JSON: unexpected end of JSON input")
	got = tb.budBindJob(t, "POST", p+"/c", `{"cost":4,"create_with":{"allocation":4,"strategy":{"type":"while_in_flight"}}}`)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 1}, {Key: "b", Cost: 2}, {Key: "c", Cost: 4}}, got.Budgets)
	require.Equal(t, int64(4), tb.budGet(t, "c", false).Allocation, "create_with created the budget")
	budError(t, tb.req(t, "DELETE", "/budgets/c", nil), http.StatusConflict,
		"budget 'c' is referenced by 1 unfinished job. Delete them or wait for them to finish before deleting it.")

	// PUT replaces one binding (a missing cost is 1) or adds it.
	got = tb.budBindJob(t, "PUT", p+"/b", `{"cost":3}`)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 1}, {Key: "b", Cost: 3}, {Key: "c", Cost: 4}}, got.Budgets)
	got = tb.budBindJob(t, "PUT", p+"/b", nil)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 1}, {Key: "b", Cost: 1}, {Key: "c", Cost: 4}}, got.Budgets)
	budError(t, tb.req(t, "PUT", p+"/b", `{"cost":4}`), http.StatusUnprocessableEntity, "job cost 4 exceeds budget 'b' burst 3")

	// PATCH changes a cost only.
	got = tb.budBindJob(t, "PATCH", p+"/a", `{"cost":5}`)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 5}, {Key: "b", Cost: 1}, {Key: "c", Cost: 4}}, got.Budgets)
	budError(t, tb.req(t, "PATCH", p+"/a", `{"cost":6}`), http.StatusUnprocessableEntity, "job cost 6 exceeds budget 'a' allocation 5")
	budError(t, tb.req(t, "PATCH", p+"/nope", `{"cost":1}`), http.StatusNotFound, "job is not bound to budget 'nope'")
	budError(t, tb.req(t, "PATCH", p+"/a", `{}`), http.StatusBadRequest, "invalid JSON: missing field `cost`")
	budError(t, tb.req(t, "PATCH", p+"/a", `{"cost":0}`), http.StatusBadRequest, "cost must be at least 1")

	// DELETE removes one binding.
	got = tb.budBindJob(t, "DELETE", p+"/c", nil)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 5}, {Key: "b", Cost: 1}}, got.Budgets)
	budError(t, tb.req(t, "DELETE", p+"/c", nil), http.StatusNotFound, "job is not bound to budget 'c'")
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/budgets/c", nil).status, "no longer referenced")

	// PUT /jobs/{id}/budgets replaces the whole list.
	got = tb.budBindJob(t, "PUT", p, `{"budgets":[{"key":"b","cost":2},{"key":"a"}]}`)
	require.Equal(t, []api.Binding{{Key: "b", Cost: 2}, {Key: "a", Cost: 1}}, got.Budgets)
	budError(t, tb.req(t, "PUT", p, `{"budgets":[{"key":"a"},{"key":"a"}]}`), http.StatusBadRequest, "budget 'a' is bound more than once")
	budError(t, tb.req(t, "PUT", p, `{}`), http.StatusBadRequest, "invalid JSON: missing field `budgets`")
	budError(t, tb.req(t, "PUT", p, `{"budgets":[{"key":"a"},{"key":"zz"}]}`), http.StatusUnprocessableEntity, "budget 'zz' does not exist")

	// The stored job says the same.
	var stored api.Job
	tb.req(t, "GET", "/jobs/"+j.ID, nil).json(t, &stored)
	require.Equal(t, []api.Binding{{Key: "b", Cost: 2}, {Key: "a", Cost: 1}}, stored.Budgets)

	// DELETE /jobs/{id}/budgets removes them all: the key disappears.
	r = tb.req(t, "DELETE", p, nil)
	budExact(t, r, http.StatusOK, budJobBody(j, "ready", ""), 0)
	r = tb.req(t, "PUT", p, `{"budgets":[]}`)
	budExact(t, r, http.StatusOK, budJobBody(j, "ready", ""), 0)
	require.NotContains(t, string(tb.req(t, "GET", "/jobs/"+j.ID, nil).body), "budgets")

	// MessagePack both ways.
	body, err := msgpack.Marshal(map[string]any{"cost": 2})
	require.NoError(t, err)
	r = tb.req(t, "POST", p+"/a", body, "Content-Type", "application/msgpack", "Accept", "application/msgpack")
	require.Equal(t, http.StatusOK, r.status, "body: %q", r.body)
	require.Equal(t, "application/msgpack", r.header.Get("Content-Type"))
	var mj api.Job
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &mj))
	require.Equal(t, []api.Binding{{Key: "a", Cost: 2}}, mj.Budgets)
	r = tb.req(t, "DELETE", "/jobs/budgets/a?id="+j.ID, nil, "Accept", "application/msgpack")
	require.Equal(t, http.StatusOK, r.status)
	var ch api.BindingChange
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &ch))
	require.Equal(t, api.BindingChange{Changed: 1, Blocked: []string{}}, ch)

	// A missing job is 404 in every form.
	missing := "/jobs/" + strings.Repeat("0", 25) + "/budgets"
	for _, c := range []struct{ m, p, body string }{
		{"POST", missing + "/a", ""}, {"PUT", missing + "/a", ""}, {"PATCH", missing + "/a", `{"cost":1}`},
		{"DELETE", missing + "/a", ""}, {"DELETE", missing, ""}, {"PUT", missing, `{"budgets":[]}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		budError(t, tb.req(t, c.m, c.p, body), http.StatusNotFound, "job not found")
	}
}

// TestBindings_JobStatus: only scheduled and ready jobs may change their
// bindings.
func TestBindings_JobStatus(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "a", `{"allocation":5,"strategy":{"type":"while_in_flight"}}`)

	far := budMs() + 3600_000
	sched := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":{},"ready_at":%d}`, far))
	got := tb.budBindJob(t, "POST", "/jobs/"+sched.ID+"/budgets/a", nil)
	require.Equal(t, "scheduled", got.Status)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 1}}, got.Budgets)
	require.Equal(t, "schedule", tb.budWhy(t, sched.ID).WaitingFor)

	ts := tb.take(t, "prefetch=1&queue=w")
	inFlight := tb.budJob(t, "w", `[{"key":"a"}]`)
	require.Equal(t, inFlight.ID, ts.next(t, budArrives).ID)
	msg := "cannot change the budgets of job " + inFlight.ID + " in in_flight status"
	budError(t, tb.req(t, "POST", "/jobs/"+inFlight.ID+"/budgets/a", nil), http.StatusUnprocessableEntity, msg)
	budError(t, tb.req(t, "DELETE", "/jobs/"+inFlight.ID+"/budgets/a", nil), http.StatusUnprocessableEntity, msg)
	budError(t, tb.req(t, "DELETE", "/jobs/"+inFlight.ID+"/budgets", nil), http.StatusUnprocessableEntity, msg)
	budError(t, tb.req(t, "PUT", "/jobs/"+inFlight.ID+"/budgets", `{"budgets":[]}`), http.StatusUnprocessableEntity, msg)

	kept := tb.enqueue(t, `{"type":"t","queue":"w","payload":{},"retention":{"completed_ms":600000}}`)
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+inFlight.ID+"/success", nil).status)
	require.Equal(t, kept.ID, ts.next(t, budArrives).ID)
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+kept.ID+"/success", nil).status)
	budError(t, tb.req(t, "POST", "/jobs/"+kept.ID+"/budgets/a", nil), http.StatusUnprocessableEntity,
		"cannot change the budgets of job "+kept.ID+" in completed status")
}

// TestBindings_Dispatch: a binding change takes effect at once.
func TestBindings_Dispatch(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// One token per hour: exhausted after one job, for far longer than the
	// test's deadlines.
	tb.budPut(t, "slow", `{"allocation":1,"strategy":{"type":"time_based","duration_ms":3600000}}`)
	tb.budPut(t, "fast", `{"allocation":100,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "wif", `{"allocation":3,"strategy":{"type":"while_in_flight"}}`)
	ts := tb.take(t, "prefetch=0&queue=q")
	first := tb.budJob(t, "q", `[{"key":"slow"}]`)
	require.Equal(t, first.ID, ts.next(t, budArrives).ID)
	parked := tb.budJobs(t, 3, "q", `[{"key":"slow"}]`)
	ts.none(t, 100*time.Millisecond)
	require.Equal(t, int64(3), tb.budState(t, "slow").Parked)

	// Unbinding a parked job from the exhausted budget dispatches it.
	tb.budBindJob(t, "DELETE", "/jobs/"+parked[1].ID+"/budgets/slow", nil)
	require.Equal(t, parked[1].ID, ts.next(t, budArrives).ID)
	// So does replacing its bindings with affordable ones.
	got := tb.budBindJob(t, "PUT", "/jobs/"+parked[2].ID+"/budgets", `{"budgets":[{"key":"fast","cost":50}]}`)
	require.Equal(t, []api.Binding{{Key: "fast", Cost: 50}}, got.Budgets)
	require.Equal(t, parked[2].ID, ts.next(t, budArrives).ID)
	ts.none(t, 100*time.Millisecond)
	require.Equal(t, int64(1), tb.budState(t, "slow").Parked)

	// Binding a ready job (no worker for its queue yet) to the exhausted
	// budget leaves it waiting for a worker; the worker that connects does
	// not get it: it parks.
	ready := tb.budJob(t, "later", "")
	require.Equal(t, "worker", tb.budWhy(t, ready.ID).WaitingFor)
	tb.budBindJob(t, "POST", "/jobs/"+ready.ID+"/budgets/slow", nil)
	require.Equal(t, "worker", tb.budWhy(t, ready.ID).WaitingFor)
	require.Equal(t, int64(1), tb.budState(t, "slow").Parked)
	tl := tb.take(t, "prefetch=0&queue=later")
	tl.none(t, 200*time.Millisecond)
	w := tb.budWhy(t, ready.ID)
	require.Equal(t, "budget", w.WaitingFor)
	require.Equal(t, "slow", w.Budgets[0].Key)
	require.Equal(t, int64(2), tb.budState(t, "slow").Parked)
	require.Equal(t, int64(2), tb.budStats(t).Jobs.Parked)
	// Unbound again, it goes to the connected worker at once.
	tb.budBindJob(t, "DELETE", "/jobs/"+ready.ID+"/budgets", nil)
	require.Equal(t, ready.ID, tl.next(t, budArrives).ID)

	// Lowering the cost of a parked job so that it fits dispatches it:
	// "wif" holds 2 of 3, the parked job needs 2, then 1.
	holder := tb.budJob(t, "q", `[{"key":"wif","cost":2}]`)
	require.Equal(t, holder.ID, ts.next(t, budArrives).ID)
	big := tb.budJob(t, "q", `[{"key":"wif","cost":2}]`)
	ts.none(t, 100*time.Millisecond)
	require.Equal(t, "budget", tb.budWhy(t, big.ID).WaitingFor)
	tb.budBindJob(t, "PATCH", "/jobs/"+big.ID+"/budgets/wif", `{"cost":1}`)
	require.Equal(t, big.ID, ts.next(t, budArrives).ID)
	st := tb.budState(t, "wif")
	require.Equal(t, int64(3), st.Held)
	require.Zero(t, st.Parked)
}

// TestBindings_Bulk covers the filter forms and the budgets.key filter.
func TestBindings_Bulk(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "a", `{"allocation":10,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "b", `{"allocation":10,"strategy":{"type":"while_in_flight"}}`)
	ts := tb.take(t, "prefetch=1&queue=x")
	x0 := tb.budJob(t, "x", "")
	require.Equal(t, x0.ID, ts.next(t, budArrives).ID)
	x := tb.budJobs(t, 2, "x", "")
	y := tb.budJobs(t, 2, "y", "")
	blocked := `"blocked":["` + x0.ID + `"]`

	changed := func(r reply, n int, blocked string) {
		t.Helper()
		budExact(t, r, http.StatusOK, fmt.Sprintf(`{"changed":%d,%s}`, n, blocked), 0)
	}
	bindings := func(id string) []api.Binding {
		t.Helper()
		var j api.Job
		tb.req(t, "GET", "/jobs/"+id, nil).json(t, &j)
		return j.Budgets
	}

	// POST binds every matching waiting job; the in-flight one is blocked.
	changed(tb.req(t, "POST", "/jobs/budgets/a?queue=x", `{"cost":2}`), 2, blocked)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 2}}, bindings(x[0].ID))
	require.Empty(t, bindings(x0.ID), "the in-flight job keeps its bindings")
	require.Empty(t, bindings(y[0].ID))
	// Already bound: left alone, not counted.
	changed(tb.req(t, "POST", "/jobs/budgets/a?queue=x", nil), 0, blocked)
	// PATCH changes the cost where bound.
	changed(tb.req(t, "PATCH", "/jobs/budgets/a", `{"cost":3}`), 2, blocked)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 3}}, bindings(x[1].ID))
	require.Empty(t, bindings(y[1].ID), "PATCH binds nothing new")
	// PUT binds or replaces on every job (no filter: all of them).
	changed(tb.req(t, "PUT", "/jobs/budgets/b", `{"cost":4}`), 4, blocked)
	require.Equal(t, []api.Binding{{Key: "a", Cost: 3}, {Key: "b", Cost: 4}}, bindings(x[0].ID))
	require.Equal(t, []api.Binding{{Key: "b", Cost: 4}}, bindings(y[0].ID))
	// With a filter that matches no in-flight job, blocked is empty.
	changed(tb.req(t, "PUT", "/jobs/budgets/b?queue=y", nil), 2, `"blocked":[]`)
	require.Equal(t, []api.Binding{{Key: "b", Cost: 1}}, bindings(y[1].ID))

	// All-or-nothing: one refusal changes nothing.
	budError(t, tb.req(t, "PATCH", "/jobs/budgets/b", `{"cost":11}`), http.StatusUnprocessableEntity, "job cost 11 exceeds budget 'b' allocation 10")
	budError(t, tb.req(t, "POST", "/jobs/budgets/c", nil), http.StatusUnprocessableEntity, "budget 'c' does not exist")
	require.Equal(t, []api.Binding{{Key: "b", Cost: 1}}, bindings(y[0].ID))
	require.Equal(t, []api.Binding{{Key: "a", Cost: 3}, {Key: "b", Cost: 4}}, bindings(x[0].ID))
	// create_with creates the budget once for all the jobs.
	changed(tb.req(t, "POST", "/jobs/budgets/c?queue=y", `{"create_with":{"allocation":2,"strategy":{"type":"while_in_flight"}}}`), 2, `"blocked":[]`)
	require.Equal(t, []api.Binding{{Key: "b", Cost: 1}, {Key: "c", Cost: 1}}, bindings(y[1].ID))
	require.Equal(t, int64(2), tb.budGet(t, "c", false).Allocation)

	// The budgets.key filter on GET /jobs and /jobs/count (a list is OR).
	var list api.JobList
	tb.req(t, "GET", "/jobs?budgets.key=a", nil).json(t, &list)
	require.Equal(t, []string{x[0].ID, x[1].ID}, []string{list.Jobs[0].ID, list.Jobs[1].ID})
	require.Len(t, list.Jobs, 2)
	require.Equal(t, int64(2), tb.budCount(t, "budgets.key=a"))
	require.Equal(t, int64(4), tb.budCount(t, "budgets.key=b"))
	require.Equal(t, int64(2), tb.budCount(t, "budgets.key=c"))
	require.Equal(t, int64(4), tb.budCount(t, "budgets.key=a,c"))
	require.Equal(t, int64(4), tb.budCount(t, "budgets.key=a&budgets.key=c"))
	require.Equal(t, int64(0), tb.budCount(t, "budgets.key=nope"))
	require.Equal(t, int64(1), tb.budCount(t, "budgets.key=c&id="+y[0].ID))
	// … and as a filter of the bulk binding forms.
	changed(tb.req(t, "DELETE", "/jobs/budgets/b?budgets.key=c", nil), 2, `"blocked":[]`)
	require.Equal(t, []api.Binding{{Key: "c", Cost: 1}}, bindings(y[0].ID))

	// DELETE /jobs/budgets/{key} removes one binding where present.
	changed(tb.req(t, "DELETE", "/jobs/budgets/a?queue=x", nil), 2, blocked)
	require.Equal(t, []api.Binding{{Key: "b", Cost: 4}}, bindings(x[0].ID))
	// DELETE /jobs/budgets removes them all.
	changed(tb.req(t, "DELETE", "/jobs/budgets?queue=y", nil), 2, `"blocked":[]`)
	require.Empty(t, bindings(y[0].ID))
	changed(tb.req(t, "DELETE", "/jobs/budgets?queue=y", nil), 0, `"blocked":[]`)
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/budgets/c", nil).status)

	// Strict query strings.
	r := tb.req(t, "DELETE", "/jobs/budgets?bogus=1", nil)
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	r = tb.req(t, "POST", "/jobs/budgets/a?limit=5", nil)
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	budError(t, tb.req(t, "POST", "/jobs/budgets/a*", nil), http.StatusBadRequest, "budget key must not contain '*' (reserved)")
}

// TestBindings_FilterOnJobs: the budgets.key filter of DELETE /jobs and
// PATCH /jobs.
func TestBindings_FilterOnJobs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "a", `{"allocation":10,"strategy":{"type":"while_in_flight"}}`)
	tb.budPut(t, "b", `{"allocation":10,"strategy":{"type":"while_in_flight"}}`)
	as := tb.budJobs(t, 3, "q", `[{"key":"a"}]`)
	bs := tb.budJobs(t, 2, "q", `[{"key":"b"},{"key":"a","cost":2}]`)
	tb.budJobs(t, 2, "q", "")

	r := tb.req(t, "PATCH", "/jobs?budgets.key=b", `{"priority":7}`)
	budExact(t, r, http.StatusOK, `{"patched":2}`, 0)
	var j api.Job
	tb.req(t, "GET", "/jobs/"+bs[0].ID, nil).json(t, &j)
	require.Equal(t, uint16(7), j.Priority)
	require.Equal(t, []api.Binding{{Key: "b", Cost: 1}, {Key: "a", Cost: 2}}, j.Budgets, "PATCH /jobs keeps the bindings")
	tb.req(t, "GET", "/jobs/"+as[0].ID, nil).json(t, &j)
	require.Equal(t, uint16(32768), j.Priority)

	budError(t, tb.req(t, "DELETE", "/budgets/b", nil), http.StatusConflict,
		"budget 'b' is referenced by 2 unfinished jobs. Delete them or wait for them to finish before deleting it.")
	r = tb.req(t, "DELETE", "/jobs?budgets.key=b", nil)
	budExact(t, r, http.StatusOK, `{"deleted":2}`, 0)
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/budgets/b", nil).status)
	require.Equal(t, int64(3), tb.budCount(t, "budgets.key=a"))
	r = tb.req(t, "DELETE", "/jobs?budgets.key=a", nil)
	budExact(t, r, http.StatusOK, `{"deleted":3}`, 0)
	require.Equal(t, int64(2), tb.budCount(t, ""))
	require.Equal(t, api.BudgetState{Available: 10, Capacity: 10}, tb.budState(t, "a"), "deleted jobs leave the line")
}

// TestBindings_Renderings: budgets appear in every rendering of a job, in
// input order with the cost materialised, and never echo create_with.
func TestBindings_Renderings(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "a", `{"allocation":5,"strategy":{"type":"while_in_flight"}}`)
	j := tb.budJob(t, "q", `[{"key":"z","cost":2,"create_with":{"allocation":9,"strategy":{"type":"while_in_flight"}}},{"key":"a"}]`)
	want := []api.Binding{{Key: "z", Cost: 2}, {Key: "a", Cost: 1}}
	require.Equal(t, want, j.Budgets)

	r := tb.req(t, "GET", "/jobs/"+j.ID, nil)
	require.Contains(t, string(r.body), `"budgets":[{"key":"z","cost":2},{"key":"a","cost":1}]`)
	require.NotContains(t, string(r.body), "create_with")
	var list api.JobList
	tb.req(t, "GET", "/jobs", nil).json(t, &list)
	require.Equal(t, want, list.Jobs[0].Budgets)

	var patched api.Job
	r = tb.req(t, "PATCH", "/jobs/"+j.ID, `{"priority":3,"budgets":[]}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r.json(t, &patched)
	require.Equal(t, want, patched.Budgets, "budgets are not patchable through PATCH /jobs")

	ts := tb.take(t, "prefetch=1")
	frame := ts.next(t, budArrives)
	require.Equal(t, j.ID, frame.ID)
	require.Equal(t, want, frame.Budgets)
	r = tb.req(t, "POST", "/jobs/"+j.ID+"/failure", `{"message":"x","kill":true}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var dead api.Job
	r.json(t, &dead)
	require.Equal(t, "dead", dead.Status)
	require.Equal(t, want, dead.Budgets)

	// A dead job retained keeps its bindings as history; it no longer holds
	// the budget, which may now be deleted.
	require.Equal(t, http.StatusNoContent, tb.req(t, "DELETE", "/budgets/z", nil).status)
	var kept api.Job
	tb.req(t, "GET", "/jobs/"+j.ID, nil).json(t, &kept)
	require.Equal(t, "dead", kept.Status)
	require.Equal(t, want, kept.Budgets)
}

// TestBindings_Restart: bindings changed through the endpoints, and budgets
// they created, survive a restart.
func TestBindings_Restart(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "a", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	jobs := tb.budJobs(t, 3, "q", "")
	tb.budBindJob(t, "PUT", "/jobs/"+jobs[0].ID+"/budgets", `{"budgets":[{"key":"a"},{"key":"n","cost":2,"create_with":{"allocation":2,"strategy":{"type":"time_based","duration_ms":60000}}}]}`)
	r := tb.req(t, "POST", "/jobs/budgets/a?id="+jobs[1].ID+","+jobs[2].ID, `{"cost":1}`)
	budExact(t, r, http.StatusOK, `{"changed":2,"blocked":[]}`, 0)
	tb.budBindJob(t, "DELETE", "/jobs/"+jobs[2].ID+"/budgets/a", nil)
	budgets := string(tb.req(t, "GET", "/budgets", nil).body)

	tb.stop()
	tb = setupIn(t, tb.dir)
	require.Equal(t, budgets, string(tb.req(t, "GET", "/budgets", nil).body))
	want := [][]api.Binding{{{Key: "a", Cost: 1}, {Key: "n", Cost: 2}}, {{Key: "a", Cost: 1}}, nil}
	for i, j := range jobs {
		var got api.Job
		tb.req(t, "GET", "/jobs/"+j.ID, nil).json(t, &got)
		require.Equal(t, want[i], got.Budgets, "job %d", i)
	}
	// The restored bindings are live: "a" (allocation 1) lets one through.
	require.Equal(t, api.JobCounts{Ready: 3}, tb.budStats(t).Jobs, "no worker, nothing parked")
	ts := tb.take(t, "prefetch=0")
	require.Equal(t, jobs[0].ID, ts.next(t, budArrives).ID)
	require.Equal(t, jobs[2].ID, ts.next(t, budArrives).ID)
	ts.none(t, 200*time.Millisecond)
	require.Equal(t, api.JobCounts{Parked: 1, InFlight: 2}, tb.budStats(t).Jobs)
}
