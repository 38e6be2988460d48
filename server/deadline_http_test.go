package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// Deadlines for waiting over HTTP (issue 26 §3, docs/API.md §Deadlines).

// errorsOf returns a job's error records.
func errorsOf(t *testing.T, tb *testBundle, id string) []api.ErrorRecord {
	t.Helper()
	r := tb.req(t, "GET", "/jobs/"+id+"/errors", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var l api.ErrorList
	r.json(t, &l)
	return l.Errors
}

// waitDead polls a job until it is dead (within d) and returns it.
func waitDead(t *testing.T, tb *testBundle, id string, d time.Duration) api.Job {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r := tb.req(t, "GET", "/jobs/"+id, nil)
		require.Equal(t, http.StatusOK, r.status, "job %s: %s", id, r.body)
		var j api.Job
		r.json(t, &j)
		if j.Status == api.StatusDead {
			return j
		}
		require.True(t, time.Now().Before(deadline), "job %s never died: %s", id, r.body)
		time.Sleep(5 * time.Millisecond)
	}
}

// notStartedBy is the start of the message of a death by start_by.
func notStartedBy(ms uint64) string {
	return "not started by " + time.UnixMilli(int64(ms)).UTC().Format(time.RFC3339Nano) + ": "
}

func TestDeadline_RenderedAndKept(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	by := msNow() + 3_600_000
	j := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":null,"start_by":%d}`, by))
	require.Equal(t, by, j.StartBy, "the enqueue answers with it")
	r := tb.req(t, "GET", "/jobs/"+j.ID, nil)
	require.Contains(t, fieldsOf(t, r.body), "start_by")
	require.Equal(t, by, jobByID(t, tb, j.ID).StartBy)

	within := tb.enqueue(t, `{"type":"t","queue":"q","payload":null,"start_within_ms":60000}`)
	require.Equal(t, within.ReadyAt+60_000, within.StartBy, "counted from the enqueue")

	plain := tb.req(t, "POST", "/jobs", `{"type":"t","queue":"q","payload":null}`)
	require.NotContains(t, fieldsOf(t, plain.body), "start_by", "left out when unset")

	var bulk api.BulkJobs
	b := tb.req(t, "POST", "/jobs/bulk", fmt.Sprintf(`{"jobs":[{"type":"t","queue":"b","payload":1,"start_by":%d},
		{"type":"t","queue":"b","payload":2,"start_within_ms":5000},{"type":"t","queue":"b","payload":3}]}`, by))
	require.Equal(t, http.StatusCreated, b.status, "body: %s", b.body)
	b.json(t, &bulk)
	require.Equal(t, by, bulk.Jobs[0].StartBy)
	require.Equal(t, bulk.Jobs[1].ReadyAt+5000, bulk.Jobs[1].StartBy)
	require.Zero(t, bulk.Jobs[2].StartBy)

	// A take frame is a job object: it has it too.
	ts := tb.take(t, "queue=q&prefetch=1")
	require.Equal(t, by, ts.next(t, 5*time.Second).StartBy)

	// It lasts a restart.
	tb.stop()
	tb = setupIn(t, tb.dir)
	require.Equal(t, by, jobByID(t, tb, j.ID).StartBy)
	require.Equal(t, within.StartBy, jobByID(t, tb, within.ID).StartBy)
}

func TestBadInput_StartBy(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	past := fmt.Sprint(msNow() - 1000)
	future := fmt.Sprint(msNow() + 60_000)
	const diesAtOnce = "start_by must be in the future: the job would die at once"
	item := func(fields string) string { return `{"jobs":[` + enqueueBody("") + `,` + enqueueBody(fields) + `]}` }
	runBad(t, tb, []badCase{
		{name: "Both", path: "/jobs", body: enqueueBody(`,"start_by":` + future + `,"start_within_ms":5`), status: 400,
			msg: "start_by and start_within_ms cannot be combined: give one"},
		{name: "Past", path: "/jobs", body: enqueueBody(`,"start_by":` + past), status: 422, msg: diesAtOnce},
		{name: "Zero", path: "/jobs", body: enqueueBody(`,"start_by":0`), status: 422, msg: diesAtOnce},
		{name: "TooLate", path: "/jobs", body: enqueueBody(`,"start_by":99999999999999999`), status: 400,
			msg: fmt.Sprintf("start_by must be at most %d", int64(api.MaxTimestampMs))},
		{name: "Negative", path: "/jobs", body: enqueueBody(`,"start_by":-1`), status: 400, msg: "invalid JSON: start_by: ", prefix: true},
		{name: "String", path: "/jobs", body: enqueueBody(`,"start_by":"soon"`), status: 400, msg: "invalid JSON: start_by: ", prefix: true},
		{name: "WithinZero", path: "/jobs", body: enqueueBody(`,"start_within_ms":0`), status: 400, msg: "start_within_ms must be at least 1"},
		{name: "WithinNegative", path: "/jobs", body: enqueueBody(`,"start_within_ms":-5`), status: 400, msg: "start_within_ms must be at least 1"},
		{name: "WithinFloat", path: "/jobs", body: enqueueBody(`,"start_within_ms":1.5`), status: 400,
			msg: "invalid JSON: start_within_ms: ", prefix: true},
		{name: "WithinTooLong", path: "/jobs", body: enqueueBody(`,"start_within_ms":99999999999999999`), status: 400,
			msg: fmt.Sprintf("start_within_ms must be at most %d", int64(api.MaxTimestampMs))},
		{name: "BulkPast", path: "/jobs/bulk", body: item(`,"start_by":` + past), status: 422, msg: "jobs[1]: " + diesAtOnce},
		{name: "BulkBoth", path: "/jobs/bulk", body: item(`,"start_by":` + future + `,"start_within_ms":5`), status: 400,
			msg: "jobs[1]: start_by and start_within_ms cannot be combined: give one"},
		{name: "BulkWithinZero", path: "/jobs/bulk", body: item(`,"start_within_ms":0`), status: 400,
			msg: "jobs[1]: start_within_ms must be at least 1"},
	})
}

// A job that waits past its start_by dies then, with a record of what it
// waited for; its budget counts it, and a dashboard sees it die as other
// deaths: "dead", then its removal from its list.
func TestDeadline_DiesWithItsReason(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "w", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	busy := tb.enqueue(t, `{"type":"t","queue":"q","payload":null,"budgets":[{"key":"w"}]}`)
	ts := tb.take(t, "queue=q&prefetch=0")
	require.Equal(t, busy.ID, ts.next(t, 5*time.Second).ID)
	ec := dialEvents(t, tb)
	ec.event(api.EventBudgetSnapshot)

	parked := tb.enqueue(t, `{"type":"t","queue":"q","payload":null,"budgets":[{"key":"w"}],"start_within_ms":1000}`)
	unserved := tb.enqueue(t, `{"type":"t","queue":"none","payload":null,"start_within_ms":1000}`)
	later := msNow() + 3_600_000
	scheduled := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":null,"ready_at":%d,"start_within_ms":1000}`, later))
	// The dashboard is shown them first (a job it never saw, it is told
	// nothing of).
	ec.seeAll(changedTo(parked.ID, api.ChangeReady), changedTo(scheduled.ID, api.ChangeScheduled))
	require.Greater(t, parked.StartBy, msNow(), "shown too late: the test proves nothing")
	for _, tc := range []struct {
		job    api.Job
		reason string
	}{
		{parked, "waiting for budget w"},
		{unserved, "waiting for a worker of queue none"},
		{scheduled, "scheduled for " + time.UnixMilli(int64(later)).UTC().Format(time.RFC3339Nano)},
	} {
		dead := waitDead(t, tb, tc.job.ID, 5*time.Second)
		require.Equal(t, tc.job.StartBy, dead.FailedAt, "dead as of its start_by")
		require.Equal(t, tc.job.StartBy, dead.StartBy, "a dead job shows what it died of")
		require.Zero(t, dead.Attempts, "it never ran")
		require.NotZero(t, dead.PurgeAt, "kept for its dead retention")
		recs := errorsOf(t, tb, tc.job.ID)
		require.Len(t, recs, 1)
		require.Equal(t, api.ErrorRecord{Attempt: 1, Message: notStartedBy(tc.job.StartBy) + tc.reason, FailedAt: tc.job.StartBy}, recs[0])
	}
	require.Equal(t, int64(1), tb.budState(t, "w").Expired)
	counted := func(f api.AdminFrame) bool {
		return f.Event == api.EventBudgetChanged && f.Budget != nil && f.Budget.State != nil && f.Budget.State.Expired == 1
	}
	died, removed := changedTo(parked.ID, api.ChangeDead), changedTo(parked.ID, api.ChangeReadyRemoved)
	ec.seeAll(died, removed, changedTo(scheduled.ID, api.ChangeDead), changedTo(scheduled.ID, api.ChangeScheduledRemoved), counted)
	require.Less(t, slices.IndexFunc(ec.seen, died), slices.IndexFunc(ec.seen, removed), "dead, then removed, as a death in flight")

	ackJob(t, tb, busy.ID)
	select {
	case <-time.After(200 * time.Millisecond):
	case f := <-ts.frames:
		if len(f) > 0 {
			t.Fatalf("a dead job reached a worker: %s", f)
		}
	}
}

// A job that started in time and comes back to the queue after its
// start_by (a failure, a disconnect) is no longer held to it, durably: it
// runs whenever, and a restart does not kill it. A job that waits while the
// server is down past its start_by dies at the restart.
func TestDeadline_AcrossARestart(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	failed := tb.enqueue(t, `{"type":"t","queue":"f","payload":null,"start_within_ms":200}`)
	dropped := tb.enqueue(t, `{"type":"t","queue":"d","payload":null,"start_within_ms":200}`)
	fs, ds := tb.take(t, "queue=f"), tb.take(t, "queue=d")
	require.Equal(t, failed.ID, fs.next(t, 5*time.Second).ID)
	require.Equal(t, dropped.ID, ds.next(t, 5*time.Second).ID)
	waiting := tb.enqueue(t, `{"type":"t","queue":"idle","payload":null,"start_within_ms":600}`)
	time.Sleep(time.Until(time.UnixMilli(int64(failed.StartBy))) + 50*time.Millisecond)
	retried := failJob(t, tb, failed.ID, fmt.Sprintf(`{"message":"boom","retry_at":%d}`, msNow()+3_600_000))
	require.Zero(t, retried.StartBy)
	require.Zero(t, jobByID(t, tb, failed.ID).StartBy)
	ds.close()
	require.Eventually(t, func() bool { return jobByID(t, tb, dropped.ID).Status == api.StatusReady }, 5*time.Second, 5*time.Millisecond)
	require.Zero(t, jobByID(t, tb, dropped.ID).StartBy)

	tb.stop()
	time.Sleep(time.Until(time.UnixMilli(int64(waiting.StartBy))) + 50*time.Millisecond)
	tb = setupIn(t, tb.dir)
	j := jobByID(t, tb, failed.ID)
	require.Equal(t, api.StatusScheduled, j.Status, "not killed by the deadline it had")
	require.Zero(t, j.StartBy)
	j = jobByID(t, tb, dropped.ID)
	require.Equal(t, api.StatusReady, j.Status, "not killed by the deadline it had")
	require.Zero(t, j.StartBy)
	dead := jobByID(t, tb, waiting.ID)
	require.Equal(t, api.StatusDead, dead.Status, "its start_by passed while the server was down")
	recs := errorsOf(t, tb, waiting.ID)
	require.Len(t, recs, 1)
	require.Equal(t, notStartedBy(waiting.StartBy)+"waiting for a worker of queue idle", recs[0].Message)
	require.GreaterOrEqual(t, recs[0].FailedAt, waiting.StartBy, "dead at the restart")
}

// expiryLateness reads the lateness histogram of /metrics: how many deaths
// it counted, and how many within the bucket of le seconds.
func expiryLateness(t *testing.T, tb *testBundle, le string) (count, within int64) {
	t.Helper()
	r := tb.req(t, "GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, r.status)
	for _, line := range strings.Split(string(r.body), "\n") {
		var n int64
		if _, err := fmt.Sscanf(line, "zizq_job_expiry_lateness_seconds_count %d", &n); err == nil {
			count = n
		}
		if _, err := fmt.Sscanf(line, `zizq_job_expiry_lateness_seconds_bucket{le="`+le+`"} %d`, &n); err == nil {
			within = n
		}
	}
	return count, within
}

// A cron entry's job may carry start_within_ms: each fire's job gets its
// start_by from its own enqueue. An absolute start_by makes no sense for a
// job made again and again, and is refused.
func TestDeadline_CronEntries(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	var e api.CronEntry
	c.call(t, "POST", "/crons/g/entries", `{"name":"e","expression":"* * * * *",
		"job":{"type":"t","queue":"cq","payload":{},"start_within_ms":5000}}`, http.StatusCreated, &e)
	require.Equal(t, int64(5000), *e.Job.StartWithinMs, "echoed")
	c.fails(t, "POST", "/crons/g/entries", `{"name":"f","expression":"* * * * *",
		"job":{"type":"t","queue":"cq","payload":{},"start_by":99999999999}}`, http.StatusBadRequest,
		"start_by is not supported for cron entries: use start_within_ms")

	c.restart(t)
	require.Equal(t, int64(5000), *c.entry(t, "g", "e").Job.StartWithinMs, "kept")
	fired := c.fireAt(t, "g", "e", uint64(cronStart.Add(30*time.Second).UnixMilli()))
	jobs := c.jobs(t, "cq")
	require.Len(t, jobs, 1)
	require.Equal(t, fired.LastEnqueueAt+5000, jobs[0].StartBy)
}

// changedTo matches a job_changed of id with status.
func changedTo(id, status string) func(api.AdminFrame) bool {
	return func(f api.AdminFrame) bool { return f.Event == api.EventJobChanged && f.ID == id && f.Status == status }
}

// seeAll reads frames until each of want has matched a frame seen so far,
// in any order, within 30 seconds.
func (ec *eventConn) seeAll(want ...func(api.AdminFrame) bool) {
	ec.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var missing []int
		for i, w := range want {
			if !slices.ContainsFunc(ec.seen, w) {
				missing = append(missing, i)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			ec.t.Fatalf("frames %v of those wanted never came; seen: %+v", missing, ec.seen)
		}
		ec.next()
	}
}
