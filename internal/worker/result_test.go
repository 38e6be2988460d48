package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

func settle(key string, cost int64) api.Settle { return api.Settle{Key: key, Cost: &cost} }

// TestParseResult: the costs and the throttle of a result file, all or
// none; what is not {"budgets":[{"key","cost"}],"throttle":{"budget",
// "retry_after_ms","count"}} is refused with a reason, members it does
// not know are ignored.
func TestParseResult(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []api.Settle
		throttle *api.Throttle
		err      string
	}{
		{name: "Empty"},
		{name: "Blank", in: " \n\t"},
		{name: "One", in: `{"budgets":[{"key":"openai-tpm","cost":1834}]}`, want: []api.Settle{settle("openai-tpm", 1834)}},
		{name: "Two", in: "{\"budgets\": [{\"key\": \"a\", \"cost\": 0}, {\"cost\": 7, \"key\": \"b\"}]}\n",
			want: []api.Settle{settle("a", 0), settle("b", 7)}},
		{name: "UnknownMembersIgnored", in: `{"pause":{"for_ms":5000},"budgets":[{"key":"a","cost":3,"why":"x"}],"v":2}`,
			want: []api.Settle{settle("a", 3)}},
		{name: "NoBudgets", in: `{"pause":{"for_ms":5000}}`},
		{name: "NullBudgets", in: `{"budgets":null}`},
		{name: "EmptyBudgets", in: `{"budgets":[]}`},
		{name: "NotJSON", in: `cost=12`, err: `it is not a JSON object {"budgets":[{"key":"…","cost":N}]}: invalid character 'c'`},
		{name: "Truncated", in: `{"budgets":[{"key":"a","cost":1}`, err: "it is not a JSON object"},
		{name: "Array", in: `[{"key":"a","cost":1}]`, err: `it is not a JSON object {"budgets":[{"key":"…","cost":N}]}`},
		{name: "Null", in: `null`, err: "it is not a JSON object"},
		{name: "TrailingData", in: `{"budgets":[]} {}`, err: "it is not a JSON object"},
		{name: "BudgetsNotArray", in: `{"budgets":{"key":"a","cost":1}}`, err: "budgets must be an array"},
		{name: "ItemNotObject", in: `{"budgets":["a"]}`, err: `budgets[0]: want an object {"key":"…","cost":N}`},
		{name: "NoKey", in: `{"budgets":[{"key":"a","cost":1},{"cost":1}]}`, err: "budgets[1]: key must be a budget key"},
		{name: "EmptyKey", in: `{"budgets":[{"key":"","cost":1}]}`, err: "budgets[0]: key must be a budget key"},
		{name: "KeyNotString", in: `{"budgets":[{"key":5,"cost":1}]}`, err: "budgets[0]: key must be a budget key"},
		{name: "NoCost", in: `{"budgets":[{"key":"a"}]}`, err: "budgets[0]: a: cost is missing"},
		{name: "NullCost", in: `{"budgets":[{"key":"a","cost":null}]}`, err: "budgets[0]: a: cost is missing"},
		{name: "FractionalCost", in: `{"budgets":[{"key":"a","cost":12.5}]}`, err: "budgets[0]: a: cost must be a whole number of tokens, got 12.5"},
		{name: "StringCost", in: `{"budgets":[{"key":"a","cost":"12"}]}`, err: `got "12"`},
		{name: "HugeCost", in: `{"budgets":[{"key":"a","cost":99999999999999999999}]}`, err: "whole number"},
		{name: "NegativeCost", in: `{"budgets":[{"key":"a","cost":-3}]}`, err: "budgets[0]: a: cost must not be negative, got -3"},

		{name: "Throttle", in: `{"throttle":{"budget":"openai","retry_after_ms":30000}}`,
			throttle: &api.Throttle{Budget: api.Ptr("openai"), RetryAfterMs: api.Ptr[int64](30000)}},
		{name: "ThrottleAlone", in: `{"throttle":{"budget":"openai"}}`, throttle: &api.Throttle{Budget: api.Ptr("openai")}},
		{name: "ThrottleCounted", in: `{"throttle":{"budget":"a","retry_after_ms":0,"count":true,"why":"429"}}`,
			throttle: &api.Throttle{Budget: api.Ptr("a"), RetryAfterMs: api.Ptr[int64](0), Count: api.Ptr(true)}},
		{name: "ThrottleNotCounted", in: `{"throttle":{"budget":"a","count":false,"retry_after_ms":null}}`,
			throttle: &api.Throttle{Budget: api.Ptr("a"), Count: api.Ptr(false)}},
		{name: "ThrottleWithCosts", in: `{"budgets":[{"key":"a","cost":3}],"throttle":{"budget":"b","retry_after_ms":5}}`,
			want: []api.Settle{settle("a", 3)}, throttle: &api.Throttle{Budget: api.Ptr("b"), RetryAfterMs: api.Ptr[int64](5)}},
		{name: "NullThrottle", in: `{"throttle":null}`},
		{name: "ThrottleNotObject", in: `{"throttle":"openai"}`, err: `throttle must be an object {"budget":"…","retry_after_ms":N}`},
		{name: "ThrottleWithoutBudget", in: `{"throttle":{"retry_after_ms":5}}`, err: "throttle.budget must be a budget key (a non-empty string)"},
		{name: "ThrottleEmptyBudget", in: `{"throttle":{"budget":""}}`, err: "throttle.budget must be a budget key"},
		{name: "ThrottleBudgetNotString", in: `{"throttle":{"budget":["a"]}}`, err: "throttle.budget must be a budget key"},
		{name: "ThrottleFractionalRetry", in: `{"throttle":{"budget":"a","retry_after_ms":1.5}}`, err: "throttle.retry_after_ms must be a whole number of milliseconds, got 1.5"},
		{name: "ThrottleStringRetry", in: `{"throttle":{"budget":"a","retry_after_ms":"30s"}}`, err: `got "30s"`},
		{name: "ThrottleNegativeRetry", in: `{"throttle":{"budget":"a","retry_after_ms":-1}}`, err: "throttle.retry_after_ms must not be negative, got -1"},
		{name: "ThrottleCountNotBool", in: `{"throttle":{"budget":"a","count":1}}`, err: "throttle.count must be true or false, got 1"},
		{name: "BadThrottleLosesCosts", in: `{"budgets":[{"key":"a","cost":3}],"throttle":{}}`, err: "throttle.budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseResult([]byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, result{}, got, "all or none")
				return
			}
			require.NoError(t, err)
			require.Equal(t, result{settles: tc.want, throttle: tc.throttle}, got)
		})
	}
}

// TestResultFiles: each run gets a fresh empty file in the worker's own
// directory; take reads and removes it, a file the command removed is no
// result, one too large is ignored; close removes the directory. Without
// a directory every run gets the null device.
func TestResultFiles(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	rf, err := newResultFiles(parent)
	require.NoError(t, err)
	p1, err := rf.create("job1")
	require.NoError(t, err)
	p2, err := rf.create("job1")
	require.NoError(t, err)
	require.NotEqual(t, p1, p2, "a fresh file a run")
	require.Equal(t, rf.dir, filepath.Dir(p1))
	require.True(t, strings.HasPrefix(filepath.Base(p1), "job1-"))
	fi, err := os.Stat(p1)
	require.NoError(t, err)
	require.Zero(t, fi.Size())
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "only the worker's user reads the costs")

	require.NoError(t, os.WriteFile(p1, []byte(`{"budgets":[{"key":"a","cost":4}]}`), 0o600))
	require.Equal(t, result{settles: []api.Settle{settle("a", 4)}}, rf.take(p1))
	require.NoFileExists(t, p1)
	require.NoError(t, os.Remove(p2))
	require.Equal(t, result{}, rf.take(p2), "removed by the command: no result")

	p3, err := rf.create("job2")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p3, bytes.Repeat([]byte(" "), maxResult+1), 0o600))
	require.Equal(t, result{warning: "it is larger than 1048576 bytes"}, rf.take(p3))
	require.NoFileExists(t, p3)

	p4, err := rf.create("job3")
	require.NoError(t, err)
	rf.discard(p4)
	require.NoFileExists(t, p4)
	_, err = rf.create("job4")
	require.NoError(t, err)
	rf.close()
	require.NoDirExists(t, rf.dir, "leftovers go with the directory")

	none, err := newResultFiles(filepath.Join(parent, "no", "such"))
	require.Error(t, err)
	p, err := none.create("job5")
	require.NoError(t, err)
	require.Equal(t, os.DevNull, p)
	require.Equal(t, result{}, none.take(p))
	none.close()
	require.FileExists(t, os.DevNull, "the null device is never removed")
}

// TestWorker_ResultFile: the command finds an empty file at $ZIZQ_RESULT;
// what it writes there comes out in its event, and a malformed file is
// ignored with a warning while the job is completed or failed all the
// same. Nothing is left in the temporary directory.
func TestWorker_ResultFile(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	var out bytes.Buffer
	script := `[ -f "$ZIZQ_RESULT" ] && [ ! -s "$ZIZQ_RESULT" ] || exit 9
case "$(cat)" in
  '{"n":1}') echo '{"budgets":[{"key":"tpm","cost":20}],"pause":{}}' > "$ZIZQ_RESULT" ;;
  '{"n":2}') echo 'cost: 20' > "$ZIZQ_RESULT" ;;
  '{"n":3}') echo '{"budgets":[{"key":"tpm","cost":150}]}' > "$ZIZQ_RESULT"; exit 4 ;;
  '{"n":4}') echo '{"budgets":[{"key":"tpm","cost":1.5}]}' > "$ZIZQ_RESULT"; exit 4 ;;
esac`
	w, ev, cl := setupWorker(t, 0, Config{Concurrency: 2, Drain: true, Grace: time.Second, DrainPoll: 50 * time.Millisecond, TempDir: tmp,
		Command: []string{"sh", "-c", script}, Output: &syncWriter{w: &out}})
	ctx := context.Background()
	ids := map[string]int{}
	for n := 1; n <= 5; n++ {
		j, err := cl.Enqueue(ctx, api.EnqueueRequest{Queue: api.Ptr("q"), Type: api.Ptr("t"), Payload: api.Payload(`{"n":` + strconv.Itoa(n) + `}`)})
		require.NoError(t, err)
		ids[j.ID] = n
	}
	require.NoError(t, w.Run(ctx))

	byN := map[int]Event{}
	for _, e := range ev.all {
		if e.Kind != EventStarted {
			byN[ids[e.ID]] = e
		}
	}
	require.Len(t, byN, 5)
	require.Equal(t, EventSucceeded, byN[1].Kind)
	require.Equal(t, []api.Settle{settle("tpm", 20)}, byN[1].Budgets)
	require.Empty(t, byN[1].Warning)
	require.Equal(t, EventSucceeded, byN[2].Kind, "a malformed file does not fail the job")
	require.Nil(t, byN[2].Budgets)
	require.Equal(t, `result file ignored: it is not a JSON object {"budgets":[{"key":"…","cost":N}]}: invalid character 'c' looking for beginning of value`, byN[2].Warning)
	require.Equal(t, EventFailed, byN[3].Kind)
	require.Equal(t, []api.Settle{settle("tpm", 150)}, byN[3].Budgets, "a failure carries its costs too")
	require.Equal(t, EventFailed, byN[4].Kind)
	require.Contains(t, byN[4].Warning, "cost must be a whole number of tokens, got 1.5")
	require.Equal(t, EventSucceeded, byN[5].Kind, "nothing written: no costs, no warning")
	require.Nil(t, byN[5].Budgets)
	require.Empty(t, byN[5].Warning)

	var id2 string
	for id, n := range ids {
		if n == 2 {
			id2 = id
		}
	}
	require.Contains(t, out.String(), "zizq: job "+id2+": result file ignored: it is not a JSON object")
	require.Contains(t, out.String(), "; its success is sent without costs\n")
	require.Contains(t, out.String(), "; its failure is sent without costs\n")
	n, err := cl.CountJobs(ctx, api.JobQuery{})
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "the three successes completed, the two failures wait for their retry")
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	require.Empty(t, left, "result files and their directory are removed")
}

// TestAcker_RefusedSettlesDropped: a server that refuses a result's costs
// (400 or 422) still gets the result, sent again without them, and the
// worker says so.
func TestAcker_RefusedSettlesDropped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Budgets []api.Settle `json:"budgets"`
		}
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", api.MediaJSON)
		switch {
		case len(req.Budgets) > 0:
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"error":"job is not bound to budget 'nope'"}`)
		case strings.HasSuffix(r.URL.Path, "/failure"):
			_, _ = io.WriteString(w, `{"id":"j2","type":"t","queue":"q","priority":1,"status":"scheduled","ready_at":1,"attempts":1}`)
		default:
			w.WriteHeader(http.StatusNoContent)
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
	ctx := context.Background()
	a.submit(ctx, jobRef{id: "j1"}, nil, []api.Settle{settle("nope", 3)})
	a.submit(ctx, jobRef{id: "j2"}, &api.FailureRequest{Message: api.Ptr("exit status 1")}, []api.Settle{settle("nope", 3)})
	require.Eventually(t, func() bool { return a.busy() == 0 }, 10*time.Second, 10*time.Millisecond)
	a.wait()
	require.Empty(t, a.undelivered())
	mu.Lock()
	defer mu.Unlock()
	require.ElementsMatch(t, []string{
		`/jobs/j1/success {"budgets":[{"key":"nope","cost":3}]}`,
		`/jobs/j1/success `,
		`/jobs/j2/failure {"message":"exit status 1","budgets":[{"key":"nope","cost":3}]}`,
		`/jobs/j2/failure {"message":"exit status 1"}`,
	}, seen)
	require.Len(t, notes, 2)
	for _, n := range notes {
		require.Contains(t, n, "the server refused the costs of its result file (job is not bound to budget 'nope'): its result is sent without them")
	}
}
