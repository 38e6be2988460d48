package server_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// TestDeadlineRealtime_ParkedJobsDieOnTime: 1,000 jobs parked on a
// time_based budget, behind a backlog of earlier jobs that keeps it busy,
// have start_by spread over 2 s. Every one dies at its start_by (the death
// and the error record are dated by the server; the bound is 50
// ms, and a death is dated as of its own deadline), none reaches a worker,
// and the budget goes on dispatching the backlog at its rate meanwhile.
// The server's own measure of how late it handled each deadline by the
// clock is reported; only a gross lateness fails the test, since a loaded
// machine may stall any process for a moment.
func TestDeadlineRealtime_ParkedJobsDieOnTime(t *testing.T) {
	t.Parallel()
	for attempt, slack := 1, int64(3); !parkedDeaths(t, slack); attempt, slack = attempt+1, slack*3 {
		require.Less(t, attempt, 3, "the enqueue outran its lead three times")
	}
}

// parkedDeaths runs the test on a server of its own; it reports false,
// having checked nothing, when the enqueue of the jobs took longer than
// the lead before their first start_by: slack times what a bulk of that
// size was measured to take there.
func parkedDeaths(t *testing.T, slack int64) bool {
	const (
		deadlines = 1000
		spreadMs  = 2000
		perSecond = 100 // the budget's rate
	)
	tb := setup(t)
	begun := time.Now()
	tb.budJobs(t, deadlines, "warm-up", "")
	leadMs := 500 + slack*time.Since(begun).Milliseconds()
	// The backlog outlasts the last start_by by a second.
	backlog := int(perSecond * (leadMs + spreadMs + 1000) / 1000)
	tb.budPut(t, "rate", fmt.Sprintf(`{"allocation":%d,"strategy":{"type":"time_based","duration_ms":1000,"burst":1}}`, perSecond))
	tb.budJobs(t, backlog, "q", `[{"key":"rate"}]`) // priority 32768: before every job below

	var received sync.Map // job ID -> api.Job, as the worker received it
	f := budNewFleet(t, tb)
	f.worker("queue=q&prefetch=0", func(fr budFrame) {
		received.Store(fr.job.ID, fr.job)
		f.spawn(func() { f.ack(fr.job.ID) })
	})

	first := msNow() + uint64(leadMs)
	items := make([]string, deadlines)
	for i := range items {
		by := first + uint64(i*spreadMs/deadlines)
		items[i] = fmt.Sprintf(`{"type":"t","queue":"q","payload":{"i":%d},"priority":40000,"start_by":%d,"budgets":[{"key":"rate"}]}`, i, by)
	}
	r := tb.req(t, "POST", "/jobs/bulk", `{"jobs":[`+strings.Join(items, ",")+`]}`)
	require.Equal(t, 201, r.status, "body: %s", r.body)
	var bulk api.BulkJobs
	r.json(t, &bulk)
	if msNow() >= first {
		t.Logf("the enqueue took longer than the lead of %d ms: again, with more", leadMs)
		return false
	}
	last := bulk.Jobs[len(bulk.Jobs)-1].StartBy

	for _, j := range bulk.Jobs {
		dead := waitDead(t, tb, j.ID, time.Until(time.UnixMilli(int64(last)))+10*time.Second)
		require.GreaterOrEqual(t, dead.FailedAt, j.StartBy, "job %s died early", j.ID)
		require.LessOrEqual(t, dead.FailedAt, j.StartBy+50, "job %s died late", j.ID)
		recs := errorsOf(t, tb, j.ID)
		require.Len(t, recs, 1)
		require.Equal(t, notStartedBy(j.StartBy)+"waiting for budget rate", recs[0].Message)
		require.GreaterOrEqual(t, recs[0].FailedAt, j.StartBy)
		require.LessOrEqual(t, recs[0].FailedAt, j.StartBy+50)
		_, got := received.Load(j.ID)
		require.False(t, got, "job %s reached a worker", j.ID)
	}
	require.Equal(t, int64(deadlines), tb.budState(t, "rate").Expired)

	// The budget kept dispatching the backlog while the jobs died: at its
	// rate by the server's clock (dequeued_at), all along the deaths.
	var during []int64
	received.Range(func(_, v any) bool {
		j := v.(api.Job)
		require.Zero(t, j.StartBy, "only the backlog is dispatched")
		if at := int64(j.DequeuedAt); at >= int64(first) && at <= int64(last) {
			during = append(during, at)
		}
		return true
	})
	sort.Slice(during, func(a, b int) bool { return during[a] < during[b] })
	span := int64(last - first)
	require.GreaterOrEqual(t, int64(len(during)), span*perSecond/1000-2,
		"the budget dispatched %d jobs over the %d ms of deaths", len(during), span)
	for i := 1; i < len(during); i++ {
		require.GreaterOrEqual(t, during[i]-during[i-1], int64(1000/perSecond-1), "over the rate")
	}

	count, within := expiryLateness(t, tb, "0.05")
	_, gross := expiryLateness(t, tb, "1")
	_, soon := expiryLateness(t, tb, "0.005")
	t.Logf("deadlines handled by the clock within 5 ms: %d, within 50 ms: %d, of %d", soon, within, count)
	require.Equal(t, int64(deadlines), count)
	require.Equal(t, count, gross, "a deadline handled more than a second late")
	return true
}
