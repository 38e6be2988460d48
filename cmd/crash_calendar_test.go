package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store/postgres/pgtest"
)

// TestCrash_CalendarKeepsSpent kills a real server with SIGKILL in the
// middle of a calendar budget's period, on both stores. A restart must not
// refill it: what the delivered jobs spent, and what their acknowledged
// settles changed, is what the next process has spent.
func TestCrash_CalendarKeepsSpent(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		root := t.TempDir()
		calendarCrash(t, false, "--root-dir", root)
	})
	t.Run("postgres", func(t *testing.T) {
		pgtest.Require(t)
		calendarCrash(t, true, "--database-url", pgtest.Schema(t), "--lease", failoverLease)
	})
}

// calendarCrash runs the test on the store the arguments name; a cluster
// of one waits to lead (after the kill, until the dead leader's lease
// has run out).
func calendarCrash(t *testing.T, cluster bool, store ...string) {
	start := func() *proc {
		p := startServer(t, store...)
		if cluster {
			leaderOf(t, []*proc{p}, 0, 30*time.Second)
		}
		return p
	}
	p := start()
	// A yearly quota that resets on the first of the month five to six
	// months from now: no reset can come during the test.
	reset := fmt.Sprintf("0 0 1 %d *", int(time.Now().UTC().AddDate(0, 6, 0).Month()))
	status, data := do(t, "PUT", p.url+"/budgets/month", map[string]any{
		"allocation": 1000, "strategy": map[string]any{"type": "calendar", "reset": reset},
	})
	require.Equal(t, http.StatusOK, status, "%s", data)
	for i := range 20 {
		status, data := do(t, "POST", p.url+"/jobs", map[string]any{
			"type": "t", "queue": "q", "payload": map[string]int{"i": i}, "budgets": []map[string]any{{"key": "month", "cost": 7}},
		})
		require.Equal(t, http.StatusCreated, status, "%s", data)
	}
	periodEnds := calendarUsed(t, p.url).NextResetAt

	// One job at a time: each is acked (some with their real cost) before
	// the next is dispatched, and the last one delivered is held when the
	// server dies. So the server has spent exactly what this worker saw.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/jobs/take?prefetch=1&queue=q", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	frames := api.NewFrameReader(resp.Body, api.NDJSON)
	var spent int64
	for i := range 9 {
		j, err := frames.Job()
		require.NoError(t, err)
		spent += 7
		if i == 8 {
			break // held, unacknowledged
		}
		var body any
		if i%3 == 0 {
			actual := int64(3 * i)
			body = map[string]any{"budgets": []map[string]any{{"key": "month", "cost": actual}}}
			spent += actual - 7
		}
		status, data := do(t, "POST", p.url+"/jobs/"+j.ID+"/success", body)
		require.Equal(t, http.StatusNoContent, status, "%s", data)
	}
	p.kill()

	p = start()
	st := calendarUsed(t, p.url)
	require.Equal(t, *periodEnds, *st.NextResetAt, "the same period")
	require.Equal(t, spent, *st.Used, "the restart kept what was spent")
	require.Equal(t, float64(1000-spent), st.Available)
	// The held job comes back and spends again when it is dispatched: a
	// crash can only make a quota stricter.
	j := takeOne(t, p.url, "q")
	require.NotEmpty(t, j.ID)
	require.Equal(t, spent+7, *calendarUsed(t, p.url).Used)
}

func calendarUsed(t *testing.T, url string) api.BudgetState {
	t.Helper()
	status, data := do(t, "GET", url+"/budgets/month?state=true", nil)
	require.Equal(t, http.StatusOK, status, "%s", data)
	var b api.Budget
	require.NoError(t, json.Unmarshal(data, &b))
	require.NotNil(t, b.State)
	require.NotNil(t, b.State.Used, "%s", data)
	require.NotNil(t, b.State.NextResetAt, "%s", data)
	return *b.State
}

// takeOne takes one job of queue and leaves it in flight.
func takeOne(t *testing.T, url, queue string) api.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/jobs/take?prefetch=1&queue=%s", url, queue), nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	j, err := api.NewFrameReader(resp.Body, api.NDJSON).Job()
	require.NoError(t, err)
	return j
}
