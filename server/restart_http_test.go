package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store"
)

func TestRestart_KeepsUnackedJobs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var jobs []api.Job
	for i := range 5 {
		jobs = append(jobs, tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"q","payload":{"n":%d,"big":18446744073709551615}}`, i)))
	}
	ts := tb.take(t, "queue=q&prefetch=3")
	var taken []api.Job
	for range 3 {
		taken = append(taken, ts.next(t, 5*time.Second))
	}
	require.Equal(t, idsOf(jobs[:3]), idsOf(taken))
	ackJob(t, tb, taken[0].ID)
	fourth := ts.next(t, 5*time.Second) // the ack freed a slot
	require.Equal(t, jobs[3].ID, fourth.ID)
	// Another in-flight job has failed once and was taken again.
	f := tb.enqueue(t, `{"type":"t","queue":"f","payload":null}`)
	fs := tb.take(t, "queue=f")
	require.Equal(t, f.ID, fs.next(t, 5*time.Second).ID)
	failJob(t, tb, f.ID, `{"message":"m","retry_at":1}`)
	again := fs.next(t, 5*time.Second)
	require.Equal(t, f.ID, again.ID)
	require.Equal(t, uint32(1), again.Attempts)
	require.Equal(t, int64(4), jobCount(t, tb, "status=in_flight"))
	scheduled := tb.enqueue(t, fmt.Sprintf(`{"type":"t","queue":"later","payload":null,"ready_at":%d}`, msNow()+3_600_000))
	done := completedJob(t, tb, "done")

	tb.stop()
	tb = setupIn(t, tb.dir)

	requireGone(t, tb, taken[0].ID)
	unacked := idsOf(jobs[1:])
	l := listJobs(t, tb, "/jobs?queue=q")
	require.Equal(t, unacked, idsOf(l.Jobs))
	for i, j := range l.Jobs {
		require.Equal(t, "ready", j.Status, j.ID)
		require.Equal(t, fmt.Sprintf(`{"big":18446744073709551615,"n":%d}`, i+1), string(j.Payload))
	}
	require.Equal(t, taken[1].DequeuedAt, l.Jobs[0].DequeuedAt, "dequeued_at is kept")
	require.Equal(t, taken[2].DequeuedAt, l.Jobs[1].DequeuedAt)
	require.Equal(t, fourth.DequeuedAt, l.Jobs[2].DequeuedAt)
	require.Zero(t, l.Jobs[3].DequeuedAt, "never taken")
	require.Zero(t, jobCount(t, tb, "status=in_flight"))
	fj := jobByID(t, tb, f.ID)
	require.Equal(t, "ready", fj.Status)
	require.Equal(t, uint32(1), fj.Attempts, "attempts survive the restart")
	require.Equal(t, again.DequeuedAt, fj.DequeuedAt)
	r := tb.req(t, "GET", "/jobs/"+f.ID+"/errors/1", nil)
	require.Equal(t, 200, r.status, "error records survive: %s", r.body)
	require.Equal(t, "scheduled", jobByID(t, tb, scheduled.ID).Status)
	require.Equal(t, "completed", jobByID(t, tb, done.ID).Status)

	var st api.Stats
	tb.req(t, "GET", "/stats", nil).json(t, &st)
	require.Equal(t, api.JobCounts{Scheduled: 1, Ready: 5}, st.Jobs)

	ts = tb.take(t, "queue=q&prefetch=0")
	var got []string
	for range 4 {
		got = append(got, ts.next(t, 5*time.Second).ID)
	}
	require.Equal(t, unacked, got)
	ts.none(t, 300*time.Millisecond)
	for _, id := range got {
		ackJob(t, tb, id)
	}
	require.Zero(t, jobCount(t, tb, "queue=q"))
}

// A server that dies leaves its in-flight jobs marked in flight in the store
// (a clean stop requeues them first). Recovery must return them to ready
// before serving.
func TestRestart_RecoversInFlightAfterCrash(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a := tb.enqueue(t, `{"type":"t","queue":"q","payload":"a"}`)
	b := tb.enqueue(t, `{"type":"t","queue":"q","payload":"b"}`)
	tb.stop()

	// Leave the store as a crash in the middle of delivering both would.
	db := servertest.OpenStore(t, tb.dir)
	dequeued := time.Now().UnixMilli()
	require.NoError(t, db.Append(store.SetStatus(a.ID, store.InFlight, dequeued), store.SetStatus(b.ID, store.InFlight, dequeued)).Wait(context.Background()))
	require.NoError(t, db.Close())

	tb = setupIn(t, tb.dir)
	for _, id := range []string{a.ID, b.ID} {
		j := jobByID(t, tb, id)
		require.Equal(t, "ready", j.Status)
		require.Equal(t, uint64(dequeued), j.DequeuedAt)
		require.Zero(t, j.Attempts)
	}
	require.Zero(t, jobCount(t, tb, "status=in_flight"))
	ts := tb.take(t, "prefetch=0")
	require.Equal(t, a.ID, ts.next(t, 5*time.Second).ID)
	require.Equal(t, b.ID, ts.next(t, 5*time.Second).ID)
	ts.none(t, 200*time.Millisecond)
}

// Restarting twice keeps every job and keeps IDs increasing.
func TestRestart_Twice(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	j := tb.enqueue(t, `{"type":"t","queue":"q","payload":1}`)
	ts := tb.take(t, "")
	require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
	dir := tb.dir
	tb.stop()
	tb = setupIn(t, dir)
	require.Equal(t, "ready", jobByID(t, tb, j.ID).Status)
	k := tb.enqueue(t, `{"type":"t","queue":"q","payload":2}`)
	require.Greater(t, k.ID, j.ID, "IDs keep increasing across restarts")
	tb.stop()
	tb = setupIn(t, dir)
	l := listJobs(t, tb, "/jobs")
	require.Equal(t, []string{j.ID, k.ID}, idsOf(l.Jobs))
	ts = tb.take(t, "prefetch=2")
	require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)
	require.Equal(t, k.ID, ts.next(t, 5*time.Second).ID)
}
