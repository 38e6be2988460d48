package cmd_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

func TestBudgetCommands(t *testing.T) {
	t.Parallel()
	c := newCLI(t)

	out := c.ok("budget", "create", "workers", "--allocation", "2", "--strategy", "while_in_flight")
	require.Equal(t, []string{
		"KEY      STRATEGY         ALLOCATION  RATE  BURST  AVAILABLE  IN FLIGHT  PARKED  NEXT TOKEN",
		"workers  while_in_flight  2           -     -      -          -          -       -",
	}, lines(out))
	c.fails(cmd.ExitFailure, "budget 'workers' already exists",
		"budget", "create", "workers", "--allocation", "2", "--strategy", "while_in_flight")

	var b api.Budget
	c.json(&b, "budget", "put", "svc:eu", "--allocation", "10000", "--strategy", "time_based", "--duration", "1h", "--burst", "5")
	require.Equal(t, "svc:eu", b.Key)
	require.Equal(t, api.Strategy{Type: api.StrategyTimeBased, DurationMs: 3600000, Burst: 5}, b.Strategy)
	require.Nil(t, b.State, "-o json prints the server's answer to the write")

	// Durations are read by the one parser: a bare number is milliseconds.
	c.json(&b, "budget", "put", "daily", "--allocation", "7", "--strategy", "time_based", "--duration", "86400000")
	require.Equal(t, int64(86400000), b.Strategy.DurationMs)

	b = api.Budget{} // json.Unmarshal keeps fields the output omits
	c.json(&b, "budget", "patch", "svc:eu", "--no-burst", "--allocation", "20000")
	require.Equal(t, int64(20000), b.Allocation)
	require.Zero(t, b.Strategy.Burst)
	require.Equal(t, int64(3600000), b.Strategy.DurationMs, "patch keeps what it is not given")
	c.json(&b, "budget", "patch", "svc:eu", "--burst", "9")
	require.Equal(t, int64(9), b.Strategy.Burst)
	require.Equal(t, int64(20000), b.Allocation)

	// The level of tokens is kept across changes and refills with time,
	// so AVAILABLE of time_based budgets is not compared.
	out = c.ok("budget", "get", "svc:eu")
	require.Equal(t, [][]string{
		{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN", "FLIGHT", "PARKED", "NEXT", "TOKEN"},
		{"svc:eu", "time_based", "20000", "20000/1h", "9", "?", "0", "0", "-"},
	}, cells(out, "svc:eu"))
	c.json(&b, "budget", "get", "svc:eu")
	require.NotNil(t, b.State)
	require.Equal(t, int64(9), b.State.Capacity)

	// A parked job shows in the live figures: a worker holds two jobs, the
	// third (cost 2) waits in the line of the spent budget.
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "workers")
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "workers")
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "workers:2")
	c.worker("q", 2, 2)
	out = c.ok("budget", "list")
	require.Equal(t, [][]string{
		{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN", "FLIGHT", "PARKED", "NEXT", "TOKEN"},
		{"daily", "time_based", "7", "7/1d", "-", "7", "0", "0", "-"},
		{"svc:eu", "time_based", "20000", "20000/1h", "9", "?", "0", "0", "-"},
		{"workers", "while_in_flight", "2", "-", "-", "0", "2", "1", "-"},
	}, cells(out, "svc:eu"))
	var list api.BudgetList
	c.json(&list, "budget", "list")
	require.Len(t, list.Budgets, 3)
	for _, b := range list.Budgets {
		require.NotNil(t, b.State, "budget list -o json includes the live state")
	}
	require.Equal(t, int64(1), list.Budgets[2].State.Parked)

	// Failures: usage (2), not found (3), refused (1).
	c.fails(cmd.ExitUsage, "required flag --strategy not set", "budget", "put", "x", "--allocation", "1")
	c.fails(cmd.ExitUsage, "required flag --allocation not set", "budget", "create", "x", "--strategy", "while_in_flight")
	c.fails(cmd.ExitUsage, `invalid --strategy "fast"`, "budget", "put", "x", "--allocation", "1", "--strategy", "fast")
	c.fails(cmd.ExitUsage, `--allocation must be 1..2147483647, got "many"`, "budget", "put", "x", "--allocation", "many", "--strategy", "while_in_flight")
	c.fails(cmd.ExitUsage, `invalid duration "soon"`, "budget", "put", "x", "--allocation", "1", "--strategy", "time_based", "--duration", "soon")
	c.fails(cmd.ExitUsage, "budget get needs KEY", "budget", "get")
	c.fails(cmd.ExitUsage, "budget delete takes only KEY, got 2 arguments", "budget", "delete", "a", "b")
	c.fails(cmd.ExitUsage, "--burst and --no-burst cannot be used together", "budget", "patch", "svc:eu", "--burst", "2", "--no-burst")
	c.fails(cmd.ExitUsage, `unknown command "frobnicate"`, "budget", "frobnicate")
	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "get", "nope")
	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "patch", "nope", "--allocation", "3")
	c.fails(cmd.ExitNotFound, "budget 'nope' not found", "budget", "delete", "nope")
	c.fails(cmd.ExitUsage, `--allocation must be 1..2147483647, got "0"`, "budget", "put", "x", "--allocation", "0", "--strategy", "while_in_flight")
	c.fails(cmd.ExitFailure, "duration_ms is required", "budget", "patch", "workers", "--strategy", "time_based")
	c.fails(cmd.ExitFailure, "unfinished jobs", "budget", "delete", "workers")

	// A delete says what it deleted.
	r := c.run("budget", "delete", "daily")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	require.Equal(t, "Deleted budget 'daily'.\n", r.out)
	require.Empty(t, r.err)
	c.fails(cmd.ExitNotFound, "not found", "budget", "get", "daily")
}

// cells splits a table into its cells, masking AVAILABLE in the rows of
// the keys given.
func cells(out string, masked ...string) [][]string {
	var rows [][]string
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) > 5 && slices.Contains(masked, f[0]) {
			f[5] = "?"
		}
		rows = append(rows, f)
	}
	return rows
}

func TestBudgetCommands_Help(t *testing.T) {
	t.Parallel()
	r := runZizq(t, "", "budget")
	require.Equal(t, cmd.ExitOK, r.code)
	for _, sub := range []string{"list", "get", "create", "put", "patch", "delete", "pause", "resume", "forecast"} {
		require.Contains(t, r.out, "  "+sub+" ")
	}
	r = runZizq(t, "", "budget", "patch", "--help")
	require.Equal(t, cmd.ExitOK, r.code)
	require.True(t, strings.Contains(r.out, "--no-burst"))
	for _, sub := range []string{"create", "put", "patch"} {
		r = runZizq(t, "", "budget", sub, "--help")
		require.Equal(t, cmd.ExitOK, r.code)
		for _, flag := range []string{"--reset", "--timezone"} {
			require.Contains(t, r.out, flag+" string", "budget %s", sub)
		}
		// The server has no calendar templates: no flags for one.
		for _, flag := range []string{"--per-key-reset", "--per-key-timezone"} {
			require.NotContains(t, r.out, flag, "budget %s", sub)
		}
	}
}

// TestBudgetCommands_CheckedBeforeAnyRequest runs against a port nothing
// listens on: a mistake the server would refuse is a usage error (2), not
// "unreachable" (4), so no request was sent.
func TestBudgetCommands_CheckedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	down := freeURL(t)
	const perKeyCalendar = "--per-key-strategy calendar is not supported: a family's sub-budgets are while_in_flight or time_based"
	for _, tc := range []struct {
		name, msg string
		args      []string
	}{
		{"TimeBasedWithoutDuration", "--strategy time_based needs --duration", []string{"create", "k", "--allocation", "5", "--strategy", "time_based"}},
		{"PutTimeBasedWithoutDuration", "--strategy time_based needs --duration", []string{"put", "k", "--allocation", "5", "--strategy", "time_based", "--burst", "2"}},
		{"DurationOfWhileInFlight", "--duration and --burst are only for --strategy time_based", []string{"create", "k", "--allocation", "5", "--strategy", "while_in_flight", "--duration", "1h"}},
		{"BurstOfWhileInFlight", "--duration and --burst are only for --strategy time_based", []string{"put", "k", "--allocation", "5", "--strategy", "while_in_flight", "--burst", "2"}},
		{"ZeroDuration", "--duration must be at least 1ms", []string{"create", "k", "--allocation", "5", "--strategy", "time_based", "--duration", "0"}},
		{"ZeroBurst", `--burst must be 1..2147483647, got "0"`, []string{"create", "k", "--allocation", "5", "--strategy", "time_based", "--duration", "1h", "--burst", "0"}},
		{"PatchNothing", "nothing to change: give at least one of --allocation, --strategy, --duration, --burst, --no-burst, --reset, --timezone, --per-key-allocation", []string{"patch", "k"}},
		{"CalendarWithoutReset", "--strategy calendar needs --reset: the cron expression", []string{"create", "k", "--allocation", "5", "--strategy", "calendar", "--timezone", "Europe/Paris"}},
		{"ResetOfTimeBased", "--reset and --timezone are only for --strategy calendar", []string{"put", "k", "--allocation", "5", "--strategy", "time_based", "--duration", "1h", "--reset", "0 0 * * *"}},
		{"TimezoneOfWhileInFlight", "--reset and --timezone are only for --strategy calendar", []string{"create", "k", "--allocation", "5", "--strategy", "while_in_flight", "--timezone", "UTC"}},
		{"DurationOfCalendar", "--duration and --burst are only for --strategy time_based", []string{"create", "k", "--allocation", "5", "--strategy", "calendar", "--reset", "0 0 * * *", "--duration", "1h"}},
		{"BurstOfCalendar", "--duration and --burst are only for --strategy time_based", []string{"put", "k", "--allocation", "5", "--strategy", "calendar", "--reset", "0 0 * * *", "--burst", "2"}},
		{"PerKeyCalendar", perKeyCalendar, []string{"create", "k", "--allocation", "5", "--strategy", "while_in_flight", "--per-key-allocation", "1", "--per-key-strategy", "calendar"}},
		{"PutPerKeyCalendar", perKeyCalendar, []string{"put", "k", "--allocation", "5", "--strategy", "calendar", "--reset", "0 0 * * *", "--per-key-allocation", "1", "--per-key-strategy", "calendar"}},
		{"PatchPerKeyCalendar", perKeyCalendar, []string{"patch", "k", "--per-key-strategy", "calendar"}},
		{"PerKeyResetGone", "unknown flag: --per-key-reset", []string{"patch", "k", "--per-key-reset", "0 0 * * *"}},
		{"PerKeyTimezoneGone", "unknown flag: --per-key-timezone", []string{"create", "k", "--allocation", "5", "--strategy", "while_in_flight", "--per-key-timezone", "UTC"}},
		{"PatchZeroDuration", "--duration must be at least 1ms", []string{"patch", "k", "--duration", "0"}},
		{"EmptyKey", `invalid KEY "": budget key must not be empty`, []string{"create", "", "--allocation", "1", "--strategy", "while_in_flight"}},
		{"CommaKey", `invalid KEY "a,b": budget key must not contain ','`, []string{"put", "a,b", "--allocation", "1", "--strategy", "while_in_flight"}},
		{"ReservedKey", `budget key must not contain '*' (reserved)`, []string{"create", "a*", "--allocation", "1", "--strategy", "while_in_flight"}},
		{"NulKey", "budget key must not contain null bytes", []string{"create", "a\x00b", "--allocation", "1", "--strategy", "while_in_flight"}},
		{"NotUTF8Key", "budget key must be valid UTF-8", []string{"create", "\xff", "--allocation", "1", "--strategy", "while_in_flight"}},
		{"GetEmptyKey", `invalid KEY ""`, []string{"get", ""}},
		{"DeleteEmptyKey", `invalid KEY ""`, []string{"delete", ""}},
		{"PatchEmptyKey", `invalid KEY ""`, []string{"patch", "", "--allocation", "2"}},
		{"PerKeyWithoutStrategy", "required flag --per-key-strategy not set", []string{"create", "k", "--allocation", "5", "--strategy", "while_in_flight", "--per-key-allocation", "1"}},
		{"PerKeyTimeBasedWithoutDuration", "--per-key-strategy time_based needs --per-key-duration", []string{"put", "k", "--allocation", "5", "--strategy", "while_in_flight", "--per-key-allocation", "1", "--per-key-strategy", "time_based"}},
		{"PerKeyBurstOfWhileInFlight", "--per-key-duration and --per-key-burst are only for --per-key-strategy time_based", []string{"put", "k", "--allocation", "5", "--strategy", "while_in_flight", "--per-key-allocation", "1", "--per-key-strategy", "while_in_flight", "--per-key-burst", "2"}},
		{"PerKeyBadStrategy", `invalid --per-key-strategy "fast": use while_in_flight or time_based`, []string{"create", "k", "--allocation", "5", "--strategy", "while_in_flight", "--per-key-allocation", "1", "--per-key-strategy", "fast"}},
		{"PatchPerKeyBurstTwice", "--per-key-burst and --no-per-key-burst cannot be used together", []string{"patch", "k", "--per-key-burst", "2", "--no-per-key-burst"}},
		{"PatchNoPerKeyWithTemplate", "--no-per-key cannot come with other --per-key-… flags", []string{"patch", "k", "--no-per-key", "--per-key-allocation", "2"}},
		{"PatchPerKeyZeroDuration", "--per-key-duration must be at least 1ms", []string{"patch", "k", "--per-key-duration", "0"}},
		{"PauseForAndUntil", "--for and --until cannot be used together", []string{"pause", "k", "--for", "1s", "--until", "5"}},
		{"PauseEmptyKey", `invalid KEY ""`, []string{"pause", ""}},
		{"ResumeEmptyKey", `invalid KEY ""`, []string{"resume", ""}},
		{"ForecastZeroDuration", "--duration must be at least 1ms", []string{"forecast", "k", "--duration", "0"}},
		{"ListEmptyParent", `--parent: invalid KEY ""`, []string{"list", "--parent", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runZizq(t, "", append([]string{"budget", "--url", down}, tc.args...)...)
			requireFails(t, r, cmd.ExitUsage, tc.msg)
		})
	}
}
