package cmd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
	"github.com/zizq/zizq/cmd"
)

// budgetEcho is a fake server that keeps the body of each budget write
// and answers it with a calendar budget.
type budgetEcho struct {
	mu     sync.Mutex
	method string
	body   map[string]any
}

func (e *budgetEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	e.mu.Lock()
	e.method, e.body = r.Method, body
	e.mu.Unlock()
	w.Header().Set("Content-Type", api.MediaJSON)
	_, _ = io.WriteString(w, `{"key":"tpd","allocation":1000,"strategy":{"type":"calendar","reset":"0 0 * * *","timezone":"Europe/Paris"},"created_at":1,"updated_at":1}`)
}

func (e *budgetEcho) last() (string, map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.method, e.body
}

// TestBudgetCommands_CalendarWire: what create, put and patch send for a
// calendar budget, against a fake server: --reset and --timezone in the
// strategy (an empty --timezone too: it says UTC), beside a template's
// own members; patch sends only what it is given, reset and timezone in
// the strategy member of an ordinary PATCH.
func TestBudgetCommands_CalendarWire(t *testing.T) {
	t.Parallel()
	echo := &budgetEcho{}
	hs := httptest.NewServer(echo)
	t.Cleanup(hs.Close)
	run := func(args ...string) map[string]any {
		t.Helper()
		r := runZizq(t, "", append([]string{"--url", hs.URL, "budget"}, args...)...)
		require.Equal(t, cmd.ExitOK, r.code, "%v: %s", args, r.err)
		_, body := echo.last()
		return body
	}
	calendar := map[string]any{"type": "calendar", "reset": "0 0 * * *", "timezone": "Europe/Paris"}
	require.Equal(t, map[string]any{"allocation": float64(1000), "strategy": calendar},
		run("create", "tpd", "--allocation", "1000", "--strategy", "calendar", "--reset", "0 0 * * *", "--timezone", "Europe/Paris"))
	require.Equal(t, map[string]any{"allocation": float64(1000), "strategy": map[string]any{"type": "calendar", "reset": "0 0 * * *", "timezone": ""},
		"per_key": map[string]any{"allocation": float64(10), "strategy": map[string]any{"type": "time_based", "duration_ms": float64(60000)}}},
		run("put", "tpd", "--allocation", "1000", "--strategy", "calendar", "--reset", "0 0 * * *", "--timezone", "",
			"--per-key-allocation", "10", "--per-key-strategy", "time_based", "--per-key-duration", "1m"))
	method, _ := echo.last()
	require.Equal(t, "PUT", method)

	require.Equal(t, map[string]any{"strategy": map[string]any{"reset": "0 6 * * *"}}, run("patch", "tpd", "--reset", "0 6 * * *"))
	method, _ = echo.last()
	require.Equal(t, "PATCH", method)
	require.Equal(t, map[string]any{"strategy": map[string]any{"timezone": ""}}, run("patch", "tpd", "--timezone", ""))
	require.Equal(t, map[string]any{"allocation": float64(5), "strategy": map[string]any{"type": "calendar", "reset": "0 0 1 * *", "timezone": "Asia/Tokyo"}},
		run("patch", "tpd", "--allocation", "5", "--strategy", "calendar", "--reset", "0 0 1 * *", "--timezone", "Asia/Tokyo"))
	require.Equal(t, map[string]any{"strategy": map[string]any{"reset": "0 0 * * 1", "timezone": "UTC"},
		"per_key": map[string]any{"strategy": map[string]any{"burst": nil}}},
		run("patch", "tpd", "--reset", "0 0 * * 1", "--timezone", "UTC", "--no-per-key-burst"))
	require.Equal(t, map[string]any{"allocation": float64(7)}, run("patch", "tpd", "--allocation", "7"), "no calendar flag, no calendar member")
}

// The tests below need the server of issue 25 (calendar budgets,
// settles); against a server without it they fail.

// TestBudgetCommands_Calendar: a calendar budget made with the flags
// reads back its reset and timezone, and its text output says what it
// used this period and when it resets.
func TestBudgetCommands_Calendar(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var b api.Budget
	c.json(&b, "budget", "create", "tpd", "--allocation", "1000", "--strategy", "calendar", "--reset", "0 0 * * *", "--timezone", "Europe/Paris")
	require.Equal(t, api.Strategy{Type: api.StrategyCalendar, Reset: "0 0 * * *", Timezone: "Europe/Paris"}, b.Strategy)

	out := c.ok("budget", "get", "tpd")
	require.Contains(t, out, "1000 at 0 0 * * * (Europe/Paris)")
	require.Regexp(t, `used 0 of 1000 this period, resets at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in [0-9hms]+\)`, out)

	b = api.Budget{}
	// An empty --timezone clears it; the server answers the default, UTC.
	c.json(&b, "budget", "patch", "tpd", "--reset", "0 * * * *", "--timezone", "")
	require.Equal(t, api.Strategy{Type: api.StrategyCalendar, Reset: "0 * * * *", Timezone: "UTC"}, b.Strategy)
	c.json(&b, "budget", "get", "tpd")
	require.NotNil(t, b.State.NextResetAt)
	require.Equal(t, time.Now().UTC().Truncate(time.Hour).Add(time.Hour).UnixMilli(), *b.State.NextResetAt)
	b = api.Budget{} // json leaves members the answer omits as they were
	c.json(&b, "budget", "put", "tpd", "--allocation", "10", "--strategy", "time_based", "--duration", "1h")
	require.Equal(t, api.Strategy{Type: api.StrategyTimeBased, DurationMs: 3_600_000}, b.Strategy)
	b = api.Budget{} // json leaves members the answer omits as they were
	c.json(&b, "budget", "patch", "tpd", "--strategy", "calendar", "--reset", "0 0 * * 1")
	require.Equal(t, api.Strategy{Type: api.StrategyCalendar, Reset: "0 0 * * 1", Timezone: "UTC"}, b.Strategy)
}

// TestBudgetCommands_Debt: a job bound at cost 100 to a budget of 100 an
// hour settled at 150 leaves it 50 in debt, which budget get and list say
// with when it is repaid; -o json passes the server's figures through.
func TestBudgetCommands_Debt(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "tpm", "--allocation", "100", "--strategy", "time_based", "--duration", "1h")
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "tpm:100")
	cl, err := client.New(c.url, client.Options{})
	require.NoError(t, err)
	ctx := t.Context()
	s, err := cl.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
	require.NoError(t, err)
	defer s.Close()
	j, err := s.Next()
	require.NoError(t, err)
	require.NoError(t, cl.AckWith(ctx, j.ID, []api.Settle{client.Settle("tpm", 150)}))

	for _, args := range [][]string{{"budget", "get", "tpm"}, {"budget", "list"}} {
		out := c.ok(args...)
		require.Contains(t, lines(out)[0], "DEBT", "%v", args)
		require.Regexp(t, `  -(49\.\d+|50)  `, out, "%v: available below zero", args)
		require.Regexp(t, `  (49\.\d+|50), repaid at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (29m\d+s|30m)\)`, out, "%v", args)
	}
	var b api.Budget
	c.json(&b, "budget", "get", "tpm")
	require.NotNil(t, b.State.Debt)
	require.InDelta(t, 50, *b.State.Debt, 1)
	require.Equal(t, &api.Settled{Count: 1, Debited: 50}, b.State.Settled)
	raw := c.ok("budget", "get", "tpm", "-o", "json")
	for _, member := range []string{`"debt":`, `"repaid_at":`, `"settled":`, `"cost_ratio":`} {
		require.True(t, strings.Contains(raw, member), "-o json passes %s through: %s", member, raw)
	}
}
