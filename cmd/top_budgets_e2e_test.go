package cmd_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// budgetCell reads the cell of a budget's row in the right-aligned column
// title: the word that ends where the header's title ends.
func budgetCell(screen, key, title string) (string, bool) {
	end := -1
	for _, l := range strings.Split(screen, "\n") {
		if i := strings.Index(l, title); i >= 0 && strings.Contains(l, "KEY") {
			end = len([]rune(l[:i])) + len([]rune(title))
			continue
		}
		r := []rune(l)
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "> "))
		if end < 0 || len(fields) == 0 || fields[0] != key || len(r) < end {
			continue
		}
		cell := strings.Fields(string(r[:end]))
		return cell[len(cell)-1], true
	}
	return "", false
}

// enqueueBound enqueues n jobs in queue "work" bound to the budget key.
func enqueueBound(t *testing.T, url, key string, n int) {
	t.Helper()
	for i := range n {
		status, body := do(t, "POST", url+"/jobs", map[string]any{"type": "t", "queue": "work", "payload": i, "budgets": []map[string]any{{"key": key}}})
		require.Equal(t, http.StatusCreated, status, "%s", body)
	}
}

func putBudget(t *testing.T, url, key string, body map[string]any) {
	t.Helper()
	status, resp := do(t, "PUT", url+"/budgets/"+key, body)
	require.Equal(t, http.StatusOK, status, "%s", resp)
}

func budgetPaused(t *testing.T, url, key string) bool {
	t.Helper()
	status, body := do(t, "GET", url+"/budgets/"+key, nil)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var b api.Budget
	require.NoError(t, json.Unmarshal(body, &b))
	return b.Paused
}

var (
	drainsInMinutes = regexp.MustCompile(`^[12]m\d\ds$`)
	pausedUntil     = regexp.MustCompile(`(?m)^[> ] later .* paused until \d\d:\d\d:\d\d`)
)

// TestTop_BudgetFamiliesForecastsAndPause: a family of two tenants (one
// job of each in flight, two more of acme parked), a budget of one token a
// minute with two jobs left, one paused until resumed and one paused for an
// hour. The Budgets tab shows the family's key count and busiest tenant,
// the backlogs' drains-in, both pauses; p pauses a budget and resumes it,
// as the API then says.
func TestTop_BudgetFamiliesForecastsAndPause(t *testing.T) {
	tm := newTmux(t)
	p := startServer(t, "--root-dir", t.TempDir())
	putBudget(t, p.url, "tenants", map[string]any{
		"allocation": 600, "strategy": map[string]any{"type": "time_based", "duration_ms": 60_000},
		"per_key": map[string]any{"allocation": 1, "strategy": map[string]any{"type": "while_in_flight"}},
	})
	putBudget(t, p.url, "slowapi", map[string]any{"allocation": 1, "strategy": map[string]any{"type": "time_based", "duration_ms": 60_000}})
	putBudget(t, p.url, "frozen", map[string]any{"allocation": 5, "strategy": map[string]any{"type": "while_in_flight"}, "paused": true})
	putBudget(t, p.url, "later", map[string]any{"allocation": 5, "strategy": map[string]any{"type": "while_in_flight"},
		"paused_until": time.Now().Add(time.Hour).UnixMilli()})
	enqueueBound(t, p.url, "tenants/acme", 3)
	enqueueBound(t, p.url, "tenants/beta", 1)
	enqueueBound(t, p.url, "slowapi", 3)
	enqueueBound(t, p.url, "frozen", 1)

	// A worker that takes what the budgets let through, and never acks.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/jobs/take?prefetch=0&queue=work", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	tm.start(p.url, "--admin-url", p.admin, "--refresh", "200ms")
	tm.waitFor("the family, the forecasts and the pauses", 20*time.Second, func(s string) bool {
		drains, _ := budgetCell(s, "slowapi", "DRAINS IN")
		frozen, _ := budgetCell(s, "frozen", "DRAINS IN")
		return strings.Contains(s, "└ 2 keys; busiest (in flight/parked): acme 1/2, beta 1/0") &&
			drainsInMinutes.MatchString(drains) && frozen == "paused" && pausedUntil.MatchString(s)
	})
	require.False(t, budgetPaused(t, p.url, "slowapi"))

	tm.run("send-keys", "-t", "top", "/", "slowapi", "Enter")
	tm.waitFor("slowapi alone", 15*time.Second, func(s string) bool { return strings.Contains(s, "> slowapi") })
	tm.run("send-keys", "-t", "top", "p")
	tm.waitFor("slowapi paused", 15*time.Second, func(s string) bool {
		drains, _ := budgetCell(s, "slowapi", "DRAINS IN")
		return strings.Contains(s, "paused budget slowapi") && drains == "paused"
	})
	require.True(t, budgetPaused(t, p.url, "slowapi"), "p paused the budget on the server")

	tm.run("send-keys", "-t", "top", "p")
	tm.waitFor("slowapi resumed", 15*time.Second, func(s string) bool { return strings.Contains(s, "resumed budget slowapi") })
	require.False(t, budgetPaused(t, p.url, "slowapi"), "p again resumed it")
	tm.quit()
}
