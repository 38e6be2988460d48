package server_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// parkedBundle is a server with a while_in_flight budget of 1 and, in
// queue w, the job that will hold its token, three more jobs on it and two
// unbudgeted ones; a job of queue x on it has no worker.
type parkedBundle struct {
	*testBundle
	held, other string
	parked      []string // in ID order
	ready       []string
}

func setupParked(t *testing.T) *parkedBundle {
	t.Helper()
	tb := &parkedBundle{testBundle: setup(t)}
	r := tb.req(t, "PUT", "/budgets/one", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	tb.held = tb.enqueue(t, `{"type":"t","queue":"w","payload":{"n":0},"budgets":[{"key":"one"}]}`).ID
	for _, n := range []string{"1", "2", "3"} {
		tb.parked = append(tb.parked, tb.enqueue(t, `{"type":"t","queue":"w","payload":{"n":`+n+`},"budgets":[{"key":"one"}]}`).ID)
	}
	for _, n := range []string{"4", "5"} {
		tb.ready = append(tb.ready, tb.enqueue(t, `{"type":"u","queue":"w","payload":{"n":`+n+`}}`).ID)
	}
	tb.other = tb.enqueue(t, `{"type":"t","queue":"x","payload":null,"budgets":[{"key":"one"}]}`).ID
	return tb
}

// busy connects a worker of w with room for one job, which holds the
// budget's only token: the three other jobs on it are parked.
func (tb *parkedBundle) busy(t *testing.T) {
	t.Helper()
	ts := tb.take(t, "prefetch=1&queue=w")
	require.Equal(t, tb.held, ts.next(t, 5*time.Second).ID)
}

func TestListJobs_Parked(t *testing.T) {
	t.Parallel()
	tb := setupParked(t)

	// With no worker, nothing is parked: the jobs wait for a worker.
	require.Zero(t, jobCount(t, tb.testBundle, "parked=true"))
	require.Empty(t, listJobs(t, tb.testBundle, "/jobs?parked=true").Jobs)

	tb.busy(t)
	var st api.Stats
	tb.req(t, "GET", "/stats", nil).json(t, &st)
	require.Equal(t, int64(3), st.Jobs.Parked, "the live counts agree")

	cases := []struct {
		query string
		want  []string
	}{
		{"parked=true", tb.parked},
		{"parked=1", tb.parked},
		{"parked=false", append(append([]string{tb.held}, tb.parked...), append(tb.ready, tb.other)...)},
		{"parked=true&queue=w", tb.parked},
		{"parked=true&queue=x", []string{}},
		{"parked=true&status=ready", tb.parked},
		{"parked=true&status=ready,in_flight", tb.parked},
		{"parked=true&status=in_flight", []string{}},
		{"parked=true&id=" + tb.parked[1] + "," + tb.ready[0], tb.parked[1:2]},
		{"parked=true&budgets.key=one", tb.parked},
		{"parked=true&type=u", []string{}},
		{"parked=true&filter=" + url.QueryEscape(".n >= 2"), tb.parked[1:]},
	}
	for _, c := range cases {
		got := listJobs(t, tb.testBundle, "/jobs?"+c.query)
		require.Equal(t, c.want, idsOf(got.Jobs), "GET /jobs?%s", c.query)
		if c.query != "parked=false" {
			for _, j := range got.Jobs {
				require.Equal(t, api.StatusReady, j.Status, "a parked job's status stays ready")
			}
		}
		require.Equal(t, int64(len(c.want)), jobCount(t, tb.testBundle, c.query), "GET /jobs/count?%s", c.query)
	}
}

func TestListJobs_ParkedPages(t *testing.T) {
	t.Parallel()
	tb := setupParked(t)
	tb.busy(t)
	p := tb.parked

	p1 := listJobs(t, tb.testBundle, "/jobs?parked=true&queue=w&limit=2")
	require.Equal(t, p[:2], idsOf(p1.Jobs))
	require.Equal(t, "/jobs?order=asc&limit=2&queue=w&parked=true", p1.Pages.Self)
	require.Equal(t, "/jobs?from="+p[1]+"&order=asc&limit=2&queue=w&parked=true", *p1.Pages.Next)
	require.Nil(t, p1.Pages.Prev)

	p2 := listJobs(t, tb.testBundle, *p1.Pages.Next)
	require.Equal(t, p[2:], idsOf(p2.Jobs))
	require.Nil(t, p2.Pages.Next)
	require.Equal(t, "/jobs?from="+p[2]+"&order=desc&limit=2&queue=w&parked=true", *p2.Pages.Prev)

	back := listJobs(t, tb.testBundle, *p2.Pages.Prev)
	require.Equal(t, []string{p[1], p[0]}, idsOf(back.Jobs))

	desc := listJobs(t, tb.testBundle, "/jobs?parked=true&order=desc")
	require.Equal(t, []string{p[2], p[1], p[0]}, idsOf(desc.Jobs))
}

func TestListJobs_ParkedInvalid(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.enqueue(t, `{"type":"t","queue":"q","payload":null}`)
	for _, path := range []string{"/jobs?parked=x", "/jobs/count?parked=x"} {
		r := tb.req(t, "GET", path, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", path, r.body)
		require.JSONEq(t, `{"error":"invalid query parameters: parked must be true or false, not \"x\""}`, string(r.body), path)
	}
	r := tb.req(t, "DELETE", "/jobs?parked=yes", nil)
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	require.Equal(t, int64(1), jobCount(t, tb, ""), "a rejected bulk delete deletes nothing")
}

// TestDeleteJobs_Parked: the bulk forms share the filter, so parked=true
// deletes the parked jobs and nothing else, never every job.
func TestDeleteJobs_Parked(t *testing.T) {
	t.Parallel()
	tb := setupParked(t)
	tb.busy(t)
	r := tb.req(t, "DELETE", "/jobs?parked=true", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	require.JSONEq(t, `{"deleted":3}`, string(r.body))
	for _, id := range tb.parked {
		requireGone(t, tb.testBundle, id)
	}
	require.Equal(t, int64(4), jobCount(t, tb.testBundle, ""), "the held, ready and unserved jobs stay")
}
