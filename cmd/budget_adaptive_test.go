package cmd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

// adaptiveEcho is a fake server that keeps the path and body of the last
// request and answers an adaptive budget.
type adaptiveEcho struct {
	mu           sync.Mutex
	method, path string
	body         map[string]any
}

func (e *adaptiveEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &body)
	}
	e.mu.Lock()
	e.method, e.path, e.body = r.Method, r.URL.Path, body
	e.mu.Unlock()
	w.Header().Set("Content-Type", api.MediaJSON)
	_, _ = io.WriteString(w, `{"key":"api","allocation":100,"strategy":{"type":"time_based","duration_ms":1000},`+
		`"adaptive":{"decrease":0.5,"recover_ms":60000,"floor":0.05},"created_at":1,"updated_at":1}`)
}

func (e *adaptiveEcho) last() (method, path string, body map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.method, e.path, e.body
}

// TestBudgetCommands_AdaptiveWire: what create, put, patch and throttle
// send, against a fake server: only the --adaptive-… flags given (the
// server fills in the rest), --adaptive alone an empty back-off,
// --no-adaptive null, --adaptive-recover in milliseconds; throttle sends
// its --retry-after in milliseconds, and {} without it.
func TestBudgetCommands_AdaptiveWire(t *testing.T) {
	t.Parallel()
	echo := &adaptiveEcho{}
	hs := httptest.NewServer(echo)
	t.Cleanup(hs.Close)
	run := func(args ...string) (string, string, map[string]any) {
		t.Helper()
		r := runZizq(t, "", append([]string{"--url", hs.URL, "budget"}, args...)...)
		require.Equal(t, cmd.ExitOK, r.code, "%v: %s", args, r.err)
		return echo.last()
	}
	rate := []string{"--allocation", "100", "--strategy", "time_based", "--duration", "1s"}

	method, _, body := run(append([]string{"create", "api"}, append(rate, "--adaptive-decrease", "0.25", "--adaptive-recover", "90s")...)...)
	require.Equal(t, "POST", method)
	require.Equal(t, map[string]any{"decrease": 0.25, "recover_ms": float64(90000)}, body["adaptive"])
	method, _, body = run(append([]string{"put", "api"}, append(rate, "--adaptive")...)...)
	require.Equal(t, "PUT", method)
	require.Equal(t, map[string]any{}, body["adaptive"], "--adaptive alone: every default")
	_, _, body = run(append([]string{"put", "api"}, rate...)...)
	require.NotContains(t, body, "adaptive", "no flag, no back-off")

	method, _, body = run("patch", "api", "--adaptive-floor", "1")
	require.Equal(t, "PATCH", method)
	require.Equal(t, map[string]any{"adaptive": map[string]any{"floor": float64(1)}}, body, "a floor of 1 is allowed")
	_, _, body = run("patch", "api", "--no-adaptive")
	require.Equal(t, map[string]any{"adaptive": nil}, body)
	_, _, body = run("patch", "api", "--allocation", "7")
	require.Equal(t, map[string]any{"allocation": float64(7)}, body, "no adaptive flag, no adaptive member")

	method, path, body := run("throttle", "a/b")
	require.Equal(t, "POST", method)
	require.Equal(t, "/budgets/a/b/throttle", path)
	require.Equal(t, map[string]any{}, body)
	_, _, body = run("throttle", "api", "--retry-after", "30s")
	require.Equal(t, map[string]any{"retry_after_ms": float64(30000)}, body)
}

// TestBudgetCommands_AdaptiveCheckedBeforeAnyRequest: the mistakes of the
// adaptive flags are usage errors (2) against a port nothing listens on,
// so no request was sent.
func TestBudgetCommands_AdaptiveCheckedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	down := freeURL(t)
	create := []string{"create", "k", "--allocation", "5", "--strategy", "while_in_flight"}
	for _, tc := range []struct {
		name, msg string
		args      []string
	}{
		{"NoAdaptiveWithDecrease", "--no-adaptive cannot come with --adaptive-decrease", []string{"patch", "k", "--no-adaptive", "--adaptive-decrease", "0.5"}},
		{"NoAdaptiveWithAdaptive", "--no-adaptive cannot come with --adaptive", []string{"patch", "k", "--adaptive", "--no-adaptive"}},
		{"NoAdaptiveWithFloor", "--no-adaptive cannot come with --adaptive-floor", []string{"patch", "k", "--no-adaptive", "--adaptive-floor", "0.1"}},
		{"NoAdaptiveWithRecover", "--no-adaptive cannot come with --adaptive-recover", []string{"patch", "k", "--no-adaptive", "--adaptive-recover", "1m"}},
		{"DecreaseOne", `--adaptive-decrease must be above 0 and below 1, got "1"`, append(create, "--adaptive-decrease", "1")},
		{"DecreaseZero", `--adaptive-decrease must be above 0 and below 1, got "0"`, append(create, "--adaptive-decrease", "0")},
		{"DecreaseNaN", `--adaptive-decrease must be above 0 and below 1, got "NaN"`, []string{"patch", "k", "--adaptive-decrease", "NaN"}},
		{"DecreaseWord", `--adaptive-decrease must be above 0 and below 1, got "half"`, []string{"patch", "k", "--adaptive-decrease", "half"}},
		{"FloorZero", `--adaptive-floor must be above 0 and at most 1, got "0"`, append(create, "--adaptive-floor", "0")},
		{"FloorAboveOne", `--adaptive-floor must be above 0 and at most 1, got "1.5"`, []string{"put", "k", "--allocation", "5", "--strategy", "while_in_flight", "--adaptive-floor", "1.5"}},
		{"RecoverZero", "--adaptive-recover must be at least 1ms", append(create, "--adaptive-recover", "0")},
		{"PatchRecoverZero", "--adaptive-recover must be at least 1ms", []string{"patch", "k", "--adaptive-recover", "0"}},
		{"AdaptiveFalse", "--adaptive=false is not a setting", append(create, "--adaptive=false")},
		{"ThrottleEmptyKey", `invalid KEY ""`, []string{"throttle", ""}},
		{"ThrottleBadRetryAfter", `invalid duration "soon"`, []string{"throttle", "k", "--retry-after", "soon"}},
		{"ThrottleTwoKeys", "budget throttle takes only KEY, got 2 arguments", []string{"throttle", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runZizq(t, "", append([]string{"budget", "--url", down}, tc.args...)...)
			requireFails(t, r, cmd.ExitUsage, tc.msg)
		})
	}
}

// The test below needs the server of issue 26 (adaptive budgets).

// TestBudgetCommands_Adaptive: an adaptive budget made with the flags
// reads back its back-off; throttle halves its rate and stops it for the
// retry-after, which get and list say in BACK-OFF and -o json passes
// through; throttle of what does not exist is 3, a refused retry-after 1;
// patch merges the back-off and --no-adaptive removes it.
func TestBudgetCommands_Adaptive(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var b api.Budget
	c.json(&b, "budget", "create", "api", "--allocation", "100", "--strategy", "time_based", "--duration", "1s", "--adaptive-floor", "0.2")
	require.Equal(t, &api.Adaptive{Decrease: 0.5, RecoverMs: 60000, Floor: 0.2}, b.Adaptive, "the server's defaults for the rest")
	c.ok("budget", "create", "plain", "--allocation", "3", "--strategy", "while_in_flight")

	out := c.ok("budget", "get", "api")
	require.Equal(t, "BACK-OFF", gapCells(out)[0][9])
	require.Equal(t, "backs off ×0.5, floor 20%, recovers in 1m", gapCells(out)[1][9], "not backing off yet")

	out = c.ok("budget", "throttle", "api", "--retry-after", "30s")
	row := gapCells(out)[1]
	require.Regexp(t, `^backs off ×0\.5, floor 20%, recovers in 1m; effective 50/s of 100/s; `+
		`throttled until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (29|30)s\)$`, row[len(row)-1])
	out = c.ok("budget", "list")
	require.Equal(t, "BACK-OFF", gapCells(out)[0][9])
	require.Contains(t, out, "effective 50/s of 100/s", "list says it too")
	require.Equal(t, "-", gapCells(out)[2][9], "a plain budget's BACK-OFF")

	b = api.Budget{}
	c.json(&b, "budget", "throttle", "plain")
	require.NotNil(t, b.State)
	require.Equal(t, int64(1), *b.State.Throttles, "a plain budget counts refusals too")
	raw := c.ok("budget", "get", "api", "-o", "json")
	for _, member := range []string{`"adaptive":`, `"effective_allocation":`, `"throttled_until":`, `"throttles":`} {
		require.True(t, strings.Contains(raw, member), "-o json passes %s through: %s", member, raw)
	}
	c.json(&b, "budget", "get", "api")
	require.InDelta(t, time.Now().Add(30*time.Second).UnixMilli(), *b.State.ThrottledUntil, 2000)

	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "throttle", "nope")
	c.fails(cmd.ExitFailure, "retry_after_ms must be at most", "budget", "throttle", "api", "--retry-after", "2d")

	b = api.Budget{}
	c.json(&b, "budget", "patch", "api", "--adaptive-decrease", "0.25")
	require.Equal(t, &api.Adaptive{Decrease: 0.25, RecoverMs: 60000, Floor: 0.2}, b.Adaptive, "merged field by field")
	b = api.Budget{}
	c.json(&b, "budget", "patch", "plain", "--adaptive")
	require.Equal(t, &api.Adaptive{Decrease: 0.5, RecoverMs: 60000, Floor: 0.05}, b.Adaptive, "--adaptive: the defaults")
	b = api.Budget{}
	c.json(&b, "budget", "patch", "api", "--no-adaptive")
	require.Nil(t, b.Adaptive)
}

// gapCells splits a table into its cells, apart by two spaces or more
// (BACK-OFF holds single spaces).
func gapCells(out string) [][]string {
	var rows [][]string
	for _, l := range lines(out) {
		rows = append(rows, twoSpaces.Split(strings.TrimSpace(l), -1))
	}
	return rows
}

var twoSpaces = regexp.MustCompile(` {2,}`)
