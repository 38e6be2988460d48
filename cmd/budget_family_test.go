package cmd_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

// TestBudgetCommands_Families: per-key flags on create, put and patch, the
// family columns, list --parent.
func TestBudgetCommands_Families(t *testing.T) {
	t.Parallel()
	c := newCLI(t)

	var b api.Budget
	c.json(&b, "budget", "create", "tenants", "--allocation", "100", "--strategy", "time_based", "--duration", "1m",
		"--per-key-allocation", "2", "--per-key-strategy", "while_in_flight")
	require.Equal(t, &api.BudgetTemplate{Allocation: 2, Strategy: api.Strategy{Type: api.StrategyWhileInFlight}}, b.PerKey)
	c.json(&b, "budget", "put", "shops", "--allocation", "5", "--strategy", "while_in_flight",
		"--per-key-allocation", "10", "--per-key-strategy", "time_based", "--per-key-duration", "1s", "--per-key-burst", "3")
	require.Equal(t, &api.BudgetTemplate{Allocation: 10, Strategy: api.Strategy{Type: api.StrategyTimeBased, DurationMs: 1000, Burst: 3}}, b.PerKey)
	c.ok("budget", "put", "plain", "--allocation", "3", "--strategy", "while_in_flight")

	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "tenants/acme")
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "tenants/zeta")
	out := c.ok("budget", "list")
	require.Equal(t, [][]string{
		{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN", "FLIGHT", "PARKED", "NEXT", "TOKEN", "PER", "KEY", "SUB-BUDGETS"},
		{"plain", "while_in_flight", "3", "-", "-", "3", "0", "0", "-", "-", "-"},
		{"shops", "while_in_flight", "5", "-", "-", "5", "0", "0", "-", "10/1s", "burst", "3", "0"},
		{"tenants", "time_based", "100", "100/1m", "-", "?", "0", "0", "-", "2", "in", "flight", "2"},
	}, cells(out, "tenants"))
	out = c.ok("budget", "list", "--parent", "tenants")
	require.Equal(t, [][]string{
		{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN", "FLIGHT", "PARKED", "NEXT", "TOKEN"},
		{"tenants/acme", "while_in_flight", "2", "-", "-", "2", "0", "0", "-"},
		{"tenants/zeta", "while_in_flight", "2", "-", "-", "2", "0", "0", "-"},
	}, cells(out))
	var list api.BudgetList
	c.json(&list, "budget", "list", "--parent", "tenants")
	require.Len(t, list.Budgets, 2)
	require.Equal(t, "tenants/acme", list.Budgets[0].Key)
	require.NotNil(t, list.Budgets[0].State)
	c.json(&b, "budget", "get", "tenants/acme")
	require.Equal(t, "tenants/acme", b.Key)

	c.json(&b, "budget", "patch", "tenants", "--per-key-allocation", "4")
	require.Equal(t, int64(4), b.PerKey.Allocation)
	b = api.Budget{} // json.Unmarshal keeps fields the output omits
	c.json(&b, "budget", "patch", "shops", "--no-per-key-burst", "--per-key-duration", "2s")
	require.Equal(t, api.Strategy{Type: api.StrategyTimeBased, DurationMs: 2000}, b.PerKey.Strategy)
	b = api.Budget{}
	c.json(&b, "budget", "patch", "shops", "--no-per-key")
	require.Nil(t, b.PerKey)
	c.json(&b, "budget", "patch", "plain", "--per-key-allocation", "1", "--per-key-strategy", "while_in_flight")
	require.NotNil(t, b.PerKey)

	c.fails(cmd.ExitNotFound, "budget family 'nope' not found", "budget", "list", "--parent", "nope")
	c.ok("budget", "put", "solo", "--allocation", "3", "--strategy", "while_in_flight")
	c.fails(cmd.ExitFailure, "budget 'solo' is not a family: it has no per_key, so no sub-budgets", "budget", "list", "--parent", "solo")
	c.fails(cmd.ExitFailure, "per_key.strategy.type is required to make 'shops' a family", "budget", "patch", "shops", "--per-key-allocation", "1")
	c.fails(cmd.ExitFailure, "family", "budget", "put", "tenants/acme", "--allocation", "1", "--strategy", "while_in_flight")
	c.fails(cmd.ExitFailure, "unfinished jobs", "budget", "delete", "tenants")
}

// TestBudgetCommands_PauseResume: pause with and without an end, the
// PAUSED column, resume; exit codes.
func TestBudgetCommands_PauseResume(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "api", "--allocation", "3", "--strategy", "while_in_flight")

	var b api.Budget
	c.json(&b, "budget", "pause", "api")
	require.True(t, b.Paused)
	require.Zero(t, b.PausedUntil)
	out := c.ok("budget", "get", "api")
	require.Equal(t, "PAUSED", cells(out)[0][len(cells(out)[0])-1])
	require.Equal(t, "yes", cells(out)[1][len(cells(out)[1])-1])

	before := time.Now().UnixMilli()
	c.json(&b, "budget", "pause", "api", "--for", "30s")
	after := time.Now().UnixMilli()
	require.True(t, b.Paused)
	require.GreaterOrEqual(t, int64(b.PausedUntil), before+30_000)
	require.LessOrEqual(t, int64(b.PausedUntil), after+30_000)
	out = c.ok("budget", "get", "api")
	require.Regexp(t, regexp.MustCompile(`until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (29|30)s\)\n$`), out)

	until := time.Now().Add(time.Hour).Truncate(time.Second)
	c.json(&b, "budget", "pause", "api", "--until", until.UTC().Format(time.RFC3339))
	require.Equal(t, uint64(until.UnixMilli()), b.PausedUntil)
	c.json(&b, "budget", "pause", "api", "--until", strconv.FormatInt(until.UnixMilli()+1, 10))
	require.Equal(t, uint64(until.UnixMilli()+1), b.PausedUntil)

	b = api.Budget{}
	c.json(&b, "budget", "resume", "api")
	require.False(t, b.Paused)
	require.Zero(t, b.PausedUntil)
	out = c.ok("budget", "get", "api")
	require.NotContains(t, out, "PAUSED", "a budget never paused shows no PAUSED column")

	c.fails(cmd.ExitUsage, "--for and --until cannot be used together", "budget", "pause", "api", "--for", "1s", "--until", "5")
	c.fails(cmd.ExitUsage, "--for must be at least 1ms", "budget", "pause", "api", "--for", "0")
	c.fails(cmd.ExitUsage, `invalid --until "soon": use RFC 3339`, "budget", "pause", "api", "--until", "soon")
	c.fails(cmd.ExitUsage, `invalid --until "0": must be after 1970`, "budget", "pause", "api", "--until", "0")
	c.fails(cmd.ExitUsage, "budget pause needs KEY", "budget", "pause")
	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "pause", "nope")
	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "resume", "nope")
}

// TestBudgetCommands_Forecast: the forecast of a paced backlog, a
// what-if, and why's expected dispatch time.
func TestBudgetCommands_Forecast(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "paced", "--allocation", "1", "--strategy", "time_based", "--duration", "1h", "--burst", "1")
	for range 3 {
		c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "paced")
	}
	c.worker("q", 10, 1) // the pool's one token pays the first; two park

	var f api.Forecast
	c.json(&f, "budget", "forecast", "paced")
	require.Equal(t, "paced", f.Key)
	require.Equal(t, int64(2), f.Parked)
	require.NotNil(t, f.DrainsAt)
	out := c.ok("budget", "forecast", "paced")
	require.Regexp(t, regexp.MustCompile(`^Budget 'paced': 2 jobs waiting; the last dispatched at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (1h59m\d+s|2h)\)\.\n$`), out)
	var w api.Forecast
	c.json(&w, "budget", "forecast", "paced", "--duration", "30m")
	require.Less(t, *w.DrainsAt, *f.DrainsAt)
	out = c.ok("budget", "forecast", "paced", "--allocation", "2")
	require.Regexp(t, `\(in (59m\d+s|1h)\)\.\n$`, out)

	c.ok("budget", "put", "empty", "--allocation", "1", "--strategy", "while_in_flight")
	require.Equal(t, "Budget 'empty': 0 jobs waiting; nothing to dispatch.\n", c.ok("budget", "forecast", "empty"))

	// why: the last job is expected when the second token comes.
	var jobs api.JobList
	c.json(&jobs, "job", "list", "--status", "ready")
	require.Len(t, jobs.Jobs, 2)
	out = c.ok("job", "why", jobs.Jobs[1].ID)
	require.Regexp(t, regexp.MustCompile(`\nExpected dispatch: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (1h59m\d+s|2h)\)\.\n`), out)
	c.ok("budget", "pause", "paced")
	out = c.ok("job", "why", jobs.Jobs[1].ID)
	require.Contains(t, out, "\nReason: budget 'paced' is paused.\n")
	require.NotContains(t, out, "Expected dispatch")

	c.fails(cmd.ExitUsage, "--duration must be at least 1ms", "budget", "forecast", "paced", "--duration", "0")
	c.fails(cmd.ExitUsage, `--allocation must be 1..2147483647, got "0"`, "budget", "forecast", "paced", "--allocation", "0")
	c.fails(cmd.ExitFailure, "burst is only valid for time_based budgets", "budget", "forecast", "empty", "--burst", "2")
	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "forecast", "nope")
}

// TestBudgetCommands_PauseUntilPast: a pause whose end has passed is
// refused, and the budget's pause stays.
func TestBudgetCommands_PauseUntilPast(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "api", "--allocation", "3", "--strategy", "while_in_flight")
	c.ok("budget", "pause", "api")
	c.fails(cmd.ExitFailure, "paused_until must be in the future: 1000 (1970-01-01T00:00:01Z) has passed", "budget", "pause", "api", "--until", "1000")
	past := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	c.fails(cmd.ExitFailure, "paused_until must be in the future", "budget", "pause", "api", "--until", past.Format(time.RFC3339))
	var b api.Budget
	c.json(&b, "budget", "get", "api")
	require.True(t, b.Paused)
	require.Zero(t, b.PausedUntil)
}

// TestBudgetCommands_PauseOneTenant: one sub-budget of a family is paused
// and resumed on its own, and list --parent shows it.
func TestBudgetCommands_PauseOneTenant(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "create", "tenants", "--allocation", "10", "--strategy", "while_in_flight",
		"--per-key-allocation", "2", "--per-key-strategy", "while_in_flight")
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "tenants/acme")
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "tenants/zeta")
	var b api.Budget
	c.json(&b, "budget", "pause", "tenants/acme")
	require.True(t, b.Paused)
	require.Equal(t, int64(2), b.Allocation)
	out := c.ok("budget", "list", "--parent", "tenants")
	require.Equal(t, []string{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN", "FLIGHT", "PARKED", "NEXT", "TOKEN", "PAUSED"}, cells(out)[0])
	require.Equal(t, []string{"tenants/acme", "yes"}, []string{cells(out)[1][0], cells(out)[1][len(cells(out)[1])-1]})
	require.Len(t, cells(out)[2], 10, "zeta is not paused: %q", cells(out)[2])
	c.fails(cmd.ExitFailure, "paused_until must be in the future", "budget", "pause", "tenants/zeta", "--until", "1000")
	b = api.Budget{}
	c.json(&b, "budget", "resume", "tenants/acme")
	require.False(t, b.Paused)
	require.NotContains(t, c.ok("budget", "list", "--parent", "tenants"), "PAUSED")
}

// TestJobWhy_PausedBudget: why on a job held by a paused while_in_flight
// budget says when the pause ends (or that it waits for a resume), in the
// format of every other time of why, and not that it waits for running
// jobs; the forecast of a budget with nothing observed says why it is
// unknown, and a what-if says it is one.
func TestJobWhy_PausedBudget(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("budget", "put", "w", "--allocation", "1", "--strategy", "while_in_flight")
	for range 2 {
		c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "w")
	}
	c.worker("q", 10, 1)
	var jobs api.JobList
	c.json(&jobs, "job", "list", "--status", "ready")
	require.Len(t, jobs.Jobs, 1)
	id := jobs.Jobs[0].ID

	c.ok("budget", "pause", "w", "--for", "1h")
	out := c.ok("job", "why", id)
	when := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (59m\d+s|1h)\)`
	require.Regexp(t, regexp.MustCompile(`\nReason: budget 'w' is paused until `+when+`\.\n`), out)
	require.Regexp(t, regexp.MustCompile(`\nw +1 +0 +0 +not before `+when+`\n`), out)
	require.NotContains(t, out, "when running jobs finish")

	c.ok("budget", "pause", "w")
	out = c.ok("job", "why", id)
	require.Contains(t, out, "\nReason: budget 'w' is paused.\n")
	require.Regexp(t, regexp.MustCompile(`\nw +1 +0 +0 +when resumed\n`), out)
	require.NotContains(t, out, "when running jobs finish")

	require.Equal(t, "Budget 'w': 1 job waiting; unknown: paused without an end.\n", c.ok("budget", "forecast", "w"))
	c.ok("budget", "resume", "w")
	require.Equal(t, "Budget 'w': 1 job waiting; unknown: no job of it has finished yet: no time in flight observed.\n", c.ok("budget", "forecast", "w"))
	require.Equal(t, "What if (nothing is changed): with allocation 2,\nBudget 'w': 1 job waiting; unknown: no job of it has finished yet: no time in flight observed.\n",
		c.ok("budget", "forecast", "w", "--allocation", "2"))
}
