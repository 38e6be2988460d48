package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// TestLoop_Throttle: a result file's throttle goes in the failure only
// when the command itself exited with status 75; a success, another
// status, a signal, a timeout or a stop (whatever status the command
// then had) leave the failure as it was and warn, on standard error too.
func TestLoop_Throttle(t *testing.T) {
	t.Parallel()
	th := &api.Throttle{Budget: api.Ptr("api"), RetryAfterMs: api.Ptr[int64](30000)}
	const ignored = "result file's throttle ignored: the command ended with "
	const only = ", and only exit status 75 (EX_TEMPFAIL) reports a refusal"
	for _, tc := range []struct {
		name    string
		out     outcome
		warning string
		word    string
	}{
		{"TempFail", outcome{pid: 1, exitCode: 75}, "", ""},
		{"Success", outcome{pid: 1, exitCode: 0}, ignored + "exit status 0" + only, "success"},
		{"OtherStatus", outcome{pid: 1, exitCode: 1}, ignored + "exit status 1" + only, "failure"},
		{"Status74", outcome{pid: 1, exitCode: 74}, ignored + "exit status 74" + only, "failure"},
		{"Signal", outcome{pid: 1, exitCode: -1, signal: "SIGKILL"}, ignored + "killed by SIGKILL" + only, "failure"},
		{"TimedOutWith75", outcome{pid: 1, exitCode: 75, timedOut: true}, ignored + "timed out after 1s" + only, "failure"},
		{"StoppedWith75", outcome{pid: 1, exitCode: 75, stopped: true}, ignored + "worker stopped" + only, "failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			l := &loop{cfg: Config{Timeout: time.Second}, notes: newLineSink(&out)}
			ev, fail := l.verdict(tc.out)
			l.throttle(&ev, fail, tc.out, th, "j1")
			require.Equal(t, tc.warning, ev.Warning)
			if tc.warning == "" {
				require.Same(t, th, fail.Throttle)
				require.Same(t, th, ev.Throttle)
				require.Empty(t, out.String())
				return
			}
			require.Nil(t, ev.Throttle)
			if fail != nil {
				require.Nil(t, fail.Throttle)
			}
			require.Equal(t, "zizq: job j1: "+tc.warning+"; its "+tc.word+" is sent without it\n", out.String())
		})
	}
}

// TestEvents_Throttle: a throttled failure says so in text, and -o json
// has the throttle as sent.
func TestEvents_Throttle(t *testing.T) {
	t.Parallel()
	e := Event{Time: at, Kind: EventFailed, ID: "j1", PID: 7, Status: 75, Message: "exit status 75",
		Throttle: &api.Throttle{Budget: api.Ptr("openai"), RetryAfterMs: api.Ptr[int64](30000)}}
	var out bytes.Buffer
	TextEvents(&out, time.Second).Event(e)
	require.Equal(t, "2026-08-31T19:16:28+10:00: Job j1 exited with status 75, throttling budget 'openai' (retry after 30s)\n", out.String())
	out.Reset()
	e.Throttle = &api.Throttle{Budget: api.Ptr("openai")}
	TextEvents(&out, time.Second).Event(e)
	require.Equal(t, "2026-08-31T19:16:28+10:00: Job j1 exited with status 75, throttling budget 'openai'\n", out.String())

	out.Reset()
	e.Throttle = &api.Throttle{Budget: api.Ptr("openai"), RetryAfterMs: api.Ptr[int64](1500), Count: api.Ptr(true)}
	JSONEvents(&out).Event(e)
	require.Equal(t, `{"time":"2026-08-31T19:16:28.005+10:00","event":"failed","id":"j1","pid":7,"status":75,"message":"exit status 75","duration_ms":0,`+
		`"throttle":{"budget":"openai","retry_after_ms":1500,"count":true}}`+"\n", out.String())
}

// TestAcker_RefusedThrottleDropped: a server that refuses a failure's
// throttle (400 or 422) still gets the failure, sent again without it
// and with its costs; a refusal that names the costs drops them and
// keeps the throttle; a refusal that names neither drops the throttle
// when there are no costs. Each time the worker says what it dropped.
func TestAcker_RefusedThrottleDropped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req api.FailureRequest
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", api.MediaJSON)
		refuse := func(status int, msg string) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":"`+msg+`"}`)
		}
		switch {
		case req.Throttle != nil && *req.Throttle.Budget == "nope":
			refuse(http.StatusUnprocessableEntity, "job j1 is not bound to budget 'nope': throttle.budget must name one of its budgets")
		case req.Throttle != nil && *req.Throttle.Budget == "mute":
			refuse(http.StatusBadRequest, "bad request")
		case len(req.Budgets) > 0 && req.Budgets[0].Key == "nope":
			refuse(http.StatusUnprocessableEntity, "job j3 is not bound to budget 'nope': budgets[0].key must name one of its budgets")
		default:
			_, _ = io.WriteString(w, `{"id":"j","type":"t","queue":"q","priority":1,"status":"scheduled","ready_at":1,"attempts":1}`)
		}
	}))
	defer hs.Close()
	cl, err := client.New(hs.URL, client.Options{Retries: -1})
	require.NoError(t, err)
	var notes []string
	a := newAcker(cl, func(s string) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, s)
	})
	fail := func(budget string) *api.FailureRequest {
		return &api.FailureRequest{Message: api.Ptr("exit status 75"), Throttle: &api.Throttle{Budget: api.Ptr(budget)}}
	}
	ctx := context.Background()
	a.submit(ctx, jobRef{id: "j1"}, fail("nope"), []api.Settle{settle("api", 3)})
	a.submit(ctx, jobRef{id: "j2"}, fail("mute"), nil)
	a.submit(ctx, jobRef{id: "j3"}, fail("api"), []api.Settle{settle("nope", 3)})
	require.Eventually(t, func() bool { return a.busy() == 0 }, 10*time.Second, 10*time.Millisecond)
	a.wait()
	require.Empty(t, a.undelivered())
	mu.Lock()
	defer mu.Unlock()
	require.ElementsMatch(t, []string{
		`/jobs/j1/failure {"message":"exit status 75","budgets":[{"key":"api","cost":3}],"throttle":{"budget":"nope"}}`,
		`/jobs/j1/failure {"message":"exit status 75","budgets":[{"key":"api","cost":3}]}`,
		`/jobs/j2/failure {"message":"exit status 75","throttle":{"budget":"mute"}}`,
		`/jobs/j2/failure {"message":"exit status 75"}`,
		`/jobs/j3/failure {"message":"exit status 75","budgets":[{"key":"nope","cost":3}],"throttle":{"budget":"api"}}`,
		`/jobs/j3/failure {"message":"exit status 75","throttle":{"budget":"api"}}`,
	}, seen)
	require.ElementsMatch(t, []string{
		"job j1: the server refused the throttle of its result file (job j1 is not bound to budget 'nope': throttle.budget must name one of its budgets): its failure is sent without it",
		"job j2: the server refused the throttle of its result file (bad request): its failure is sent without it",
		"job j3: the server refused the costs of its result file (job j3 is not bound to budget 'nope': budgets[0].key must name one of its budgets): its result is sent without them",
	}, notes)
}

// TestWorker_Throttle, against a real server: a command that writes a
// throttle and exits 75 fails its job with it (the budget counts the
// refusal, backs off and pays nothing for the retry-after, the job's
// retry does not count toward its limit); 75 without a throttle is an
// ordinary failure; a throttle with exit status 0 is ignored with a
// warning; a throttle the server refuses (a budget the job is not bound
// to) is dropped and the failure goes with its costs.
func TestWorker_Throttle(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	tmp := t.TempDir()
	script := `case "$(cat)" in
  '{"n":1}') echo '{"throttle":{"budget":"api","retry_after_ms":60000}}' > "$ZIZQ_RESULT"; exit 75 ;;
  '{"n":2}') exit 75 ;;
  '{"n":3}') echo '{"throttle":{"budget":"svc"}}' > "$ZIZQ_RESULT" ;;
  '{"n":4}') echo '{"budgets":[{"key":"svc","cost":3}],"throttle":{"budget":"api"}}' > "$ZIZQ_RESULT"; exit 75 ;;
esac`
	w, ev, cl := setupWorker(t, 0, Config{Concurrency: 2, Drain: true, Grace: time.Second, DrainPoll: 50 * time.Millisecond, TempDir: tmp,
		Command: []string{"sh", "-c", script}, Output: &syncWriter{w: &out}})
	ctx := context.Background()
	perSecond := func(key string, adaptive *api.AdaptiveInput) {
		_, err := cl.PutBudget(ctx, key, api.BudgetInput{Allocation: api.Ptr[int64](100), Strategy: &api.StrategyInput{
			Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr[int64](1000)}, Adaptive: adaptive})
		require.NoError(t, err)
	}
	perSecond("api", &api.AdaptiveInput{})
	perSecond("svc", nil)
	ids := map[int]string{}
	for n := 1; n <= 4; n++ {
		budget := "svc"
		if n == 1 {
			budget = "api"
		}
		// retry_limit 0, and retries an hour away: the job that comes
		// back is the one the throttle did not count.
		j, err := cl.Enqueue(ctx, api.EnqueueRequest{Queue: api.Ptr("q"), Type: api.Ptr("t"), Payload: api.Payload(`{"n":` + strconv.Itoa(n) + `}`),
			RetryLimit: api.Ptr[uint32](0), Backoff: &api.BackoffRequest{Exponent: api.Ptr[float32](1), BaseMs: api.Ptr[uint32](3_600_000), JitterMs: api.Ptr[uint32](0)},
			Budgets: []api.BindingRequest{{Key: api.Ptr(budget), Cost: api.Ptr[int64](1)}}})
		require.NoError(t, err)
		ids[n] = j.ID
	}
	require.NoError(t, w.Run(ctx))

	byID := map[string]Event{}
	for _, e := range ev.all {
		if e.Kind != EventStarted {
			byID[e.ID] = e
		}
	}
	require.Len(t, byID, 4)
	first := byID[ids[1]]
	require.Equal(t, EventFailed, first.Kind)
	require.Equal(t, &api.Throttle{Budget: api.Ptr("api"), RetryAfterMs: api.Ptr[int64](60000)}, first.Throttle)
	require.Empty(t, first.Warning)
	j, err := cl.GetJob(ctx, ids[1])
	require.NoError(t, err)
	require.Equal(t, api.StatusScheduled, j.Status, "a throttled failure does not count toward retry_limit 0")
	b, err := cl.GetBudget(ctx, "api", true)
	require.NoError(t, err)
	require.Equal(t, int64(1), *b.State.Throttles)
	require.InDelta(t, 50, *b.State.EffectiveAllocation, 0.5)
	require.NotNil(t, b.State.ThrottledUntil)
	require.InDelta(t, time.Now().Add(time.Minute).UnixMilli(), *b.State.ThrottledUntil, 5000)

	require.Nil(t, byID[ids[2]].Throttle)
	require.Empty(t, byID[ids[2]].Warning)
	j, err = cl.GetJob(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, api.StatusDead, j.Status, "75 without a throttle is an ordinary failure: it counts")

	third := byID[ids[3]]
	require.Equal(t, EventSucceeded, third.Kind)
	require.Nil(t, third.Throttle)
	require.Contains(t, third.Warning, "result file's throttle ignored: the command ended with exit status 0")
	s, err := cl.GetBudget(ctx, "svc", true)
	require.NoError(t, err)
	require.Nil(t, s.State.Throttles, "svc was never throttled")

	fourth := byID[ids[4]]
	require.Equal(t, EventFailed, fourth.Kind)
	require.Equal(t, "api", *fourth.Throttle.Budget, "the event says what the file said")
	j, err = cl.GetJob(ctx, ids[4])
	require.NoError(t, err)
	require.Equal(t, api.StatusDead, j.Status, "sent without its throttle, the failure counts")
	require.Equal(t, &api.Settled{Count: 1, Debited: 2}, s.State.Settled, "and with its costs")
	require.Contains(t, out.String(), "zizq: job "+ids[4]+": the server refused the throttle of its result file (job "+ids[4]+" is not bound to budget 'api': throttle.budget must name one of its budgets): its failure is sent without it\n")
	require.Contains(t, out.String(), "zizq: job "+ids[3]+": result file's throttle ignored")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left)
	require.False(t, strings.Contains(out.String(), "refused its result"), "no outcome was lost: %s", out.String())
}
