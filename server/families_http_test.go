package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store"
)

// Budget families, pauses and forecasts over HTTP (issue 16). Helpers carry
// a "fam" prefix: other test files of the package are written concurrently.

// famStart is the fake clock's start in the family tests, so that every
// timestamp of an answer is known.
var famStart = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// famT0 is famStart in unix ms.
var famT0 = famStart.UnixMilli()

// famBundle is a server on a fake clock, spoken to in one body format.
type famBundle struct {
	*testBundle
	clk    *clock.Fake
	format api.Format
}

func famSetup(t *testing.T, f api.Format, tune ...func(*server.Options)) *famBundle {
	t.Helper()
	clk := clock.NewFake(famStart)
	tune = append([]func(*server.Options){func(o *server.Options) { o.Clock = clk }}, tune...)
	return &famBundle{testBundle: setup(t, tune...), clk: clk, format: f}
}

// famEachFormat runs fn as a parallel subtest per body format, each with
// its own server.
func famEachFormat(t *testing.T, fn func(t *testing.T, b *famBundle)) {
	t.Helper()
	for _, f := range []struct {
		name string
		f    api.Format
	}{{"JSON", api.JSON}, {"MsgPack", api.MsgPack}} {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			fn(t, famSetup(t, f.f))
		})
	}
}

// restart stops the server and starts it again on its data and clock.
func (b *famBundle) restart(t *testing.T) {
	t.Helper()
	b.stop()
	b.testBundle = setupIn(t, b.dir, func(o *server.Options) { o.Clock = b.clk })
}

// send sends body (a JSON text, as MessagePack when the bundle speaks it)
// and returns the answer, whose body is JSON whatever the format (a
// MessagePack answer is converted, its maps in the order they came).
func (b *famBundle) send(t *testing.T, method, path, body string) (status int, answer string) {
	t.Helper()
	var header []string
	var payload any
	if body != "" {
		payload = body
		if b.format == api.MsgPack {
			payload = jsonToMsgpack(t, body)
			header = append(header, "Content-Type", api.MediaMsgPack)
		}
	}
	if b.format == api.MsgPack {
		header = append(header, "Accept", api.MediaMsgPack)
	}
	r := b.req(t, method, path, payload, header...)
	if len(r.body) == 0 {
		return r.status, ""
	}
	require.Equal(t, api.ContentType(b.format), r.header.Get("Content-Type"), "%s %s: %q", method, path, r.body)
	if b.format == api.JSON {
		return r.status, string(r.body)
	}
	var raw json.RawMessage
	require.NoError(t, api.Unmarshal(api.MsgPack, r.body, &raw), "body: %q", r.body)
	return r.status, string(raw)
}

// exact requires the status and the answer byte for byte (as JSON).
func (b *famBundle) exact(t *testing.T, method, path, body string, status int, want string) {
	t.Helper()
	got, answer := b.send(t, method, path, body)
	require.Equal(t, status, got, "%s %s: %s", method, path, answer)
	require.Equal(t, want, answer, "%s %s", method, path)
}

// call requires the status and decodes the answer into out (nil: ignored).
func (b *famBundle) call(t *testing.T, method, path, body string, status int, out any) {
	t.Helper()
	got, answer := b.send(t, method, path, body)
	require.Equal(t, status, got, "%s %s: %s", method, path, answer)
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero()
		require.NoError(t, json.Unmarshal([]byte(answer), out), "body: %s", answer)
	}
}

// fails requires an error status and its exact message.
func (b *famBundle) fails(t *testing.T, method, path, body string, status int, msg string) {
	t.Helper()
	var e api.Error
	b.call(t, method, path, body, status, &e)
	require.Equal(t, msg, e.Error, "%s %s", method, path)
}

// failsLike requires an error status and a message matching pattern: for
// the engine's refusals, whose words are the engine's.
func (b *famBundle) failsLike(t *testing.T, method, path, body string, status int, pattern string) {
	t.Helper()
	var e api.Error
	b.call(t, method, path, body, status, &e)
	require.Regexp(t, regexp.MustCompile(pattern), e.Error, "%s %s", method, path)
}

func (b *famBundle) budget(t *testing.T, path string) api.Budget {
	t.Helper()
	var out api.Budget
	b.call(t, "GET", path, "", http.StatusOK, &out)
	return out
}

// snapshot is every budget as GET /budgets renders it, and one path's
// answer: what a refused request must leave as it was.
func (b *famBundle) snapshot(t *testing.T, path string) string {
	t.Helper()
	_, list := b.send(t, "GET", "/budgets", "")
	_, one := b.send(t, "GET", path, "")
	return list + "\n" + one
}

// famJob enqueues a job of queue q bound as the budgets JSON array says.
func (b *famBundle) famJob(t *testing.T, q, budgets string) api.Job {
	t.Helper()
	var j api.Job
	b.call(t, "POST", "/jobs", `{"type":"t","queue":"`+q+`","payload":{},"budgets":`+budgets+`}`, http.StatusCreated, &j)
	return j
}

// famJobs enqueues n jobs like famJob, in one bulk request.
func (b *famBundle) famJobs(t *testing.T, n int, q, budgets string) []api.Job {
	t.Helper()
	items := make([]string, n)
	for i := range items {
		items[i] = `{"type":"t","queue":"` + q + `","payload":{},"budgets":` + budgets + `}`
	}
	var out api.BulkJobs
	b.call(t, "POST", "/jobs/bulk", `{"jobs":[`+strings.Join(items, ",")+`]}`, http.StatusCreated, &out)
	require.Len(t, out.Jobs, n)
	return out.Jobs
}

const (
	// famTenants is a family: a shared upstream limit of 100 a minute,
	// and at most 2 jobs in flight per tenant.
	famTenants     = `{"allocation":100,"strategy":{"type":"time_based","duration_ms":60000},"per_key":{"allocation":2,"strategy":{"type":"while_in_flight"}}}`
	famTenantsEcho = `"allocation":100,"strategy":{"type":"time_based","duration_ms":60000},"per_key":{"allocation":2,"strategy":{"type":"while_in_flight"}}`
	famPlain       = `{"allocation":3,"strategy":{"type":"while_in_flight"}}`
)

// famStamps are the created_at and updated_at of a budget written at ms.
func famStamps(created, updated int64) string {
	return fmt.Sprintf(`"created_at":%d,"updated_at":%d`, created, updated)
}

// TestFamilies_Shapes checks the exact answers for a family, a paused
// budget and a forecast, in both formats, and that budgets without the
// new fields keep Zizq's shape.
func TestFamilies_Shapes(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		stamps := famStamps(famT0, famT0)
		family := `{"key":"tenants",` + famTenantsEcho + `,` + stamps + `}`
		b.exact(t, "PUT", "/budgets/tenants", famTenants, http.StatusOK, family)
		b.exact(t, "GET", "/budgets/tenants", "", http.StatusOK, family)
		b.exact(t, "PUT", "/budgets/timed", `{"allocation":1,"strategy":{"type":"while_in_flight"},
			"per_key":{"allocation":4,"strategy":{"type":"time_based","duration_ms":1000,"burst":2}}}`, http.StatusOK,
			`{"key":"timed","allocation":1,"strategy":{"type":"while_in_flight"},`+
				`"per_key":{"allocation":4,"strategy":{"type":"time_based","duration_ms":1000,"burst":2}},`+stamps+`}`)

		until := famT0 + 30_000
		b.exact(t, "PUT", "/budgets/api", `{"allocation":3,"strategy":{"type":"while_in_flight"},"paused":true}`, http.StatusOK,
			`{"key":"api","allocation":3,"strategy":{"type":"while_in_flight"},"paused":true,`+stamps+`}`)
		b.exact(t, "PUT", "/budgets/api2", fmt.Sprintf(`{"allocation":3,"strategy":{"type":"while_in_flight"},"paused_until":%d}`, until), http.StatusOK,
			fmt.Sprintf(`{"key":"api2","allocation":3,"strategy":{"type":"while_in_flight"},"paused_until":%d,%s}`, until, stamps))
		both := fmt.Sprintf(`{"key":"api3","allocation":3,"strategy":{"type":"while_in_flight"},"paused":true,"paused_until":%d,%s}`, until, stamps)
		b.exact(t, "POST", "/budgets/api3", fmt.Sprintf(`{"allocation":3,"strategy":{"type":"while_in_flight"},"paused":true,"paused_until":%d}`, until),
			http.StatusCreated, both)
		b.exact(t, "GET", "/budgets/api3", "", http.StatusOK, both)

		// Without the new fields, and with them false or null, a budget
		// has Zizq's shape.
		plain := `{"key":"plain","allocation":3,"strategy":{"type":"while_in_flight"},` + stamps + `}`
		b.exact(t, "PUT", "/budgets/plain", famPlain, http.StatusOK, plain)
		b.exact(t, "PUT", "/budgets/plain", `{"allocation":3,"strategy":{"type":"while_in_flight"},"paused":false,"per_key":null,"paused_until":null}`,
			http.StatusOK, plain)

		// The live state of a family counts its sub-budgets; others have
		// no such figure.
		var fam api.Budget
		b.call(t, "GET", "/budgets/tenants?state=true", "", http.StatusOK, &fam)
		require.NotNil(t, fam.State)
		require.NotNil(t, fam.State.SubBudgets, "a family's state counts its sub-budgets")
		require.Zero(t, *fam.State.SubBudgets)
		_, answer := b.send(t, "GET", "/budgets/plain?state=true", "")
		require.Contains(t, answer, `"state":{`)
		require.NotContains(t, answer, "sub_budgets")

		// A forecast: five jobs on a budget paced at one every 100 ms, its
		// one token there now: the last goes at +400 ms.
		b.call(t, "PUT", "/budgets/paced", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":1}}`, http.StatusOK, nil)
		b.famJobs(t, 5, "nobody", `[{"key":"paced"}]`)
		before := b.snapshot(t, "/budgets/paced?state=true")
		b.exact(t, "GET", "/budgets/paced/forecast", "", http.StatusOK,
			fmt.Sprintf(`{"key":"paced","parked":5,"drains_at":%d,"estimated":false}`, famT0+400))
		// What if it were twice as fast: nothing changes.
		b.exact(t, "GET", "/budgets/paced/forecast?allocation=20", "", http.StatusOK,
			fmt.Sprintf(`{"key":"paced","parked":5,"drains_at":%d,"estimated":false,"what_if":{"allocation":20}}`, famT0+200))
		b.exact(t, "GET", "/budgets/paced/forecast?allocation=20&burst=2&duration_ms=500", "", http.StatusOK,
			fmt.Sprintf(`{"key":"paced","parked":5,"drains_at":%d,"estimated":false,"what_if":{"allocation":20,"duration_ms":500,"burst":2}}`, famT0+100))
		// Unknown: it says why.
		b.famJobs(t, 2, "nobody", `[{"key":"api"}]`)
		b.exact(t, "GET", "/budgets/api/forecast", "", http.StatusOK,
			`{"key":"api","parked":2,"drains_at":null,"estimated":true,"unknown":"paused without an end"}`)
		require.Equal(t, before, b.snapshot(t, "/budgets/paced?state=true"), "a what-if changes nothing")
	})
}

// TestFamilies_BadInput: every refusal names the field, with the status
// of its kind (400 undecodable, 422 a broken rule), and changes nothing.
func TestFamilies_BadInput(t *testing.T) {
	t.Parallel()
	const maxMs = "9223372036854"
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"TemplateWithoutAllocation", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"strategy":{"type":"while_in_flight"}}}`,
			400, "invalid JSON: missing field `per_key.allocation`"},
		{"TemplateWithoutStrategy", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1}}`,
			400, "invalid JSON: missing field `per_key.strategy`"},
		{"TemplateWithoutType", "POST", "/budgets/new", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{}}}`,
			400, "invalid JSON: missing field `per_key.strategy.type`"},
		{"TemplateWithoutDuration", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"time_based"}}}`,
			400, "invalid JSON: missing field `per_key.strategy.duration_ms`"},
		{"TemplateUnknownType", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"leaky"}}}`,
			400, "invalid JSON: unknown variant `leaky`, expected `while_in_flight`, `time_based` or `calendar`"},
		{"MissingFieldsComeFirst", "PUT", "/budgets/f", `{"allocation":0,"strategy":{"type":"while_in_flight"},"per_key":{"strategy":{"type":"while_in_flight"}}}`,
			400, "invalid JSON: missing field `per_key.allocation`"},
		{"TemplateAllocationZero", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":0,"strategy":{"type":"while_in_flight"}}}`,
			422, "per_key.allocation must be at least 1"},
		{"TemplateBurstOnWhileInFlight", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"while_in_flight","burst":2}}}`,
			422, "per_key.burst is only valid for time_based budgets"},
		{"TemplateDurationZero", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"time_based","duration_ms":0}}}`,
			422, "per_key.duration_ms must be at least 1"},
		{"BudgetRuleBeforeTemplateRule", "PUT", "/budgets/f", `{"allocation":0,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":0,"strategy":{"type":"while_in_flight"}}}`,
			422, "allocation must be at least 1"},
		{"PausedNotABool", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"paused":"yes"}`,
			400, "invalid JSON: paused: cannot unmarshal string into bool"},
		{"PausedUntilNegative", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"paused_until":-1}`,
			400, "invalid JSON: paused_until: cannot unmarshal number -1 into uint64"},
		{"PausedUntilZero", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"paused_until":0}`,
			422, "paused_until must be at least 1"},
		{"PausedUntilTooLate", "POST", "/budgets/new", `{"allocation":1,"strategy":{"type":"while_in_flight"},"paused_until":9223372036855}`,
			422, "paused_until must be at most " + maxMs},
		{"PausedFalseWithAnEnd", "PUT", "/budgets/f", `{"allocation":1,"strategy":{"type":"while_in_flight"},"paused":false,"paused_until":5}`,
			422, "paused_until cannot come with paused false: paused_until pauses the budget"},
		{"PatchIncompleteFamily", "PATCH", "/budgets/plain", `{"per_key":{"allocation":2}}`,
			422, "per_key.strategy.type is required to make 'plain' a family"},
		{"PatchEmptyFamily", "PATCH", "/budgets/plain", `{"per_key":{}}`,
			422, "per_key.allocation is required to make 'plain' a family"},
		{"PatchTemplateRule", "PATCH", "/budgets/f", `{"per_key":{"strategy":{"burst":3}}}`,
			422, "per_key.burst is only valid for time_based budgets"},
		{"PatchTemplateTypeChange", "PATCH", "/budgets/f", `{"per_key":{"strategy":{"type":"time_based"}}}`,
			422, "per_key.duration_ms is required for time_based budgets"},
		{"PatchTemplateNull", "PATCH", "/budgets/f", `{"per_key":{"allocation":null}}`,
			422, "per_key.allocation cannot be null"},
		{"PatchTemplateUnknown", "PATCH", "/budgets/f", `{"per_key":{"allocation":1,"kind":"x"}}`,
			422, `unknown field "per_key.kind"`},
		{"PatchTemplateNotAnObject", "PATCH", "/budgets/f", `{"per_key":[1]}`,
			400, "invalid JSON: per_key must be an object"},
		{"PatchPausedNotABool", "PATCH", "/budgets/f", `{"paused":"no"}`,
			400, "invalid JSON: paused must be true or false"},
		{"PatchPausedUntilNotANumber", "PATCH", "/budgets/f", `{"paused_until":"soon"}`,
			400, "invalid JSON: paused_until must be a non-negative integer"},
		{"PatchPausedUntilZero", "PATCH", "/budgets/f", `{"paused_until":0}`,
			422, "paused_until must be at least 1"},
		{"PatchResumeWithAnEnd", "PATCH", "/budgets/f", `{"paused":false,"paused_until":5}`,
			422, "paused_until cannot come with paused false or null: they resume the budget"},
		{"PatchResumeNullWithAnEnd", "PATCH", "/budgets/f", `{"paused":null,"paused_until":5}`,
			422, "paused_until cannot come with paused false or null: they resume the budget"},
		{"CreateWithFamily", "POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"n","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"while_in_flight"}}}}]}`,
			400, "create_with: per_key is not allowed here: set it with PUT or PATCH /budgets/{key}"},
		{"CreateWithPause", "POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"n","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"},"paused":true}}]}`,
			400, "create_with: paused is not allowed here: set it with PUT or PATCH /budgets/{key}"},
		{"ParentEmpty", "GET", "/budgets?parent=", "", 400, "invalid query parameters: parent must not be empty"},
		{"ParentUnknownField", "GET", "/budgets?family=f", "", 400, "invalid query parameters: unknown field `family`, expected one of `state`, `parent`"},
		{"ParentMissing", "GET", "/budgets?parent=nope", "", 404, "budget family 'nope' not found"},
		{"ParentNotAFamily", "GET", "/budgets?parent=plain", "", 422, "budget 'plain' is not a family: it has no per_key, so no sub-budgets"},
		{"ParentSubBudget", "GET", "/budgets?parent=f%2Fa", "", 422, "budget 'f/a' is not a family: it has no per_key, so no sub-budgets"},
		{"ForecastMissing", "GET", "/budgets/nope/forecast", "", 404, "budget 'nope' not found"},
		{"ForecastMissingWhatIf", "GET", "/budgets/nope/forecast?allocation=2", "", 404, "budget 'nope' not found"},
		{"WhatIfNotANumber", "GET", "/budgets/f/forecast?allocation=lots", "", 400, `invalid query parameters: allocation must be a non-negative integer, not "lots"`},
		{"WhatIfUnknown", "GET", "/budgets/f/forecast?rate=2", "", 400, "invalid query parameters: unknown field `rate`, expected one of `allocation`, `duration_ms`, `burst`"},
		{"WhatIfTwice", "GET", "/budgets/f/forecast?burst=2&burst=3", "", 400, "invalid query parameters: duplicate field `burst`"},
		{"WhatIfAllocationZero", "GET", "/budgets/f/forecast?allocation=0", "", 422, "allocation must be at least 1"},
		{"WhatIfDurationOnWhileInFlight", "GET", "/budgets/f/forecast?duration_ms=10", "", 422, "duration_ms is only valid for time_based budgets"},
		{"WhatIfBurstOnWhileInFlight", "GET", "/budgets/f/forecast?burst=10", "", 422, "burst is only valid for time_based budgets"},
		{"WhatIfTooLarge", "GET", "/budgets/rate/forecast?allocation=2147483648", "", 422, "allocation must be at most 2147483647"},
		{"WhatIfDurationZero", "GET", "/budgets/rate/forecast?duration_ms=0", "", 422, "duration_ms must be at least 1"},
		{"ForecastIsRead", "POST", "/budgets/f/forecast", "", 405, "method not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			famEachFormat(t, func(t *testing.T, b *famBundle) {
				b.call(t, "PUT", "/budgets/f", `{"allocation":5,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"while_in_flight"}},"paused_until":4102444800000}`, http.StatusOK, nil)
				b.call(t, "PUT", "/budgets/plain", famPlain, http.StatusOK, nil)
				b.call(t, "PUT", "/budgets/rate", `{"allocation":5,"strategy":{"type":"time_based","duration_ms":1000}}`, http.StatusOK, nil)
				path := tc.path
				if i := strings.Index(path, "?"); i >= 0 {
					path = path[:i]
				}
				before := b.snapshot(t, path)
				msg := tc.msg
				if b.format == api.MsgPack {
					msg = strings.Replace(msg, "invalid JSON: ", "invalid MessagePack: ", 1)
				}
				b.fails(t, tc.method, tc.path, tc.body, tc.status, msg)
				require.Equal(t, before, b.snapshot(t, path), "a refused request changes nothing")
				var jobs api.Count
				b.call(t, "GET", "/jobs/count", "", http.StatusOK, &jobs)
				require.Zero(t, jobs.Count)
			})
		})
	}
}

// TestFamilies_Patch: per_key is merged member by member like the
// budget's own members, null makes a family plain again, and the pause
// members set, end and clear a pause.
func TestFamilies_Patch(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		stamps := famStamps(famT0, famT0)
		b.call(t, "PUT", "/budgets/tenants", famTenants, http.StatusOK, nil)
		head := func(alloc int) string {
			return fmt.Sprintf(`{"key":"tenants","allocation":%d,"strategy":{"type":"time_based","duration_ms":60000},`, alloc)
		}
		for _, step := range []struct {
			patch  string
			alloc  int
			perKey string
		}{
			{`{"per_key":{"allocation":7}}`, 100, `{"allocation":7,"strategy":{"type":"while_in_flight"}}`},
			{`{"per_key":{"strategy":{"type":"time_based","duration_ms":1000}}}`, 100, `{"allocation":7,"strategy":{"type":"time_based","duration_ms":1000}}`},
			{`{"per_key":{"strategy":{"burst":3}}}`, 100, `{"allocation":7,"strategy":{"type":"time_based","duration_ms":1000,"burst":3}}`},
			{`{"allocation":50,"per_key":{"allocation":8,"strategy":{"burst":null}}}`, 50, `{"allocation":8,"strategy":{"type":"time_based","duration_ms":1000}}`},
			{`{"per_key":{"strategy":{"type":"while_in_flight"}}}`, 50, `{"allocation":8,"strategy":{"type":"while_in_flight"}}`},
			{`{}`, 50, `{"allocation":8,"strategy":{"type":"while_in_flight"}}`},
		} {
			b.exact(t, "PATCH", "/budgets/tenants", step.patch, http.StatusOK, head(step.alloc)+`"per_key":`+step.perKey+`,`+stamps+`}`)
		}
		// null: a plain budget again.
		b.exact(t, "PATCH", "/budgets/tenants", `{"per_key":null}`, http.StatusOK, head(50)+stamps+`}`)
		// A complete per_key makes a plain budget a family.
		b.exact(t, "PATCH", "/budgets/tenants", `{"per_key":{"allocation":1,"strategy":{"type":"time_based","duration_ms":10}}}`, http.StatusOK,
			head(50)+`"per_key":{"allocation":1,"strategy":{"type":"time_based","duration_ms":10}},`+stamps+`}`)

		// Pauses, on a plain budget.
		b.call(t, "PUT", "/budgets/api", famPlain, http.StatusOK, nil)
		api := `{"key":"api","allocation":3,"strategy":{"type":"while_in_flight"},`
		until := famT0 + 5000
		for _, step := range []struct{ patch, pause string }{
			{`{"paused":true}`, `"paused":true,`},
			{fmt.Sprintf(`{"paused_until":%d}`, until), fmt.Sprintf(`"paused":true,"paused_until":%d,`, until)},
			{`{}`, fmt.Sprintf(`"paused":true,"paused_until":%d,`, until)},
			{`{"paused_until":null}`, `"paused":true,`},
			{`{"paused":false}`, ``},
			{fmt.Sprintf(`{"paused_until":%d}`, until), fmt.Sprintf(`"paused_until":%d,`, until)},
			{`{"paused":false}`, ``}, // resuming ends a pause with an end too
			{fmt.Sprintf(`{"paused":true,"paused_until":%d}`, until+1), fmt.Sprintf(`"paused":true,"paused_until":%d,`, until+1)},
			{`{"paused":null}`, ``},
			{`{"paused":true,"paused_until":null}`, `"paused":true,`},
			{`{"paused":false,"paused_until":null}`, ``},
		} {
			b.exact(t, "PATCH", "/budgets/api", step.patch, http.StatusOK, api+step.pause+stamps+`}`)
		}
		// A PUT replaces everything: the pause and the family go.
		b.call(t, "PATCH", "/budgets/api", `{"paused":true,"per_key":{"allocation":1,"strategy":{"type":"while_in_flight"}}}`, http.StatusOK, nil)
		b.exact(t, "PUT", "/budgets/api", famPlain, http.StatusOK, api+stamps+`}`)
	})
}

// TestFamilies_PercentEncodedKeys: a key holding '/' travels
// percent-encoded in a path, as the clients' URL encoding sends it; the
// raw form is another path, and stays a 404.
func TestFamilies_PercentEncodedKeys(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		// A plain budget whose key holds '/', with no family "a".
		var got api.Budget
		b.call(t, "PUT", "/budgets/a%2Fb", famPlain, http.StatusOK, &got)
		require.Equal(t, "a/b", got.Key)
		require.Equal(t, "a/b", b.budget(t, "/budgets/a%2Fb?state=true").Key)
		b.fails(t, "GET", "/budgets/a/b", "", http.StatusNotFound, "not found")
		b.fails(t, "PUT", "/budgets/a/b", famPlain, http.StatusNotFound, "not found")
		var f api.Forecast
		b.call(t, "GET", "/budgets/a%2Fb/forecast", "", http.StatusOK, &f)
		require.Equal(t, "a/b", f.Key)
		b.fails(t, "GET", "/budgets/a/b/forecast", "", http.StatusNotFound, "not found")
		b.call(t, "DELETE", "/budgets/a%2Fb", "", http.StatusNoContent, nil)
		b.fails(t, "GET", "/budgets/a%2Fb", "", http.StatusNotFound, "budget 'a/b' not found")

		// A budget named "forecast" is a budget like any other.
		b.call(t, "PUT", "/budgets/forecast", famPlain, http.StatusOK, nil)
		require.Equal(t, "forecast", b.budget(t, "/budgets/forecast").Key)
		b.call(t, "GET", "/budgets/forecast/forecast", "", http.StatusOK, &f)
		require.Equal(t, "forecast", f.Key)

		// A sub-budget, made at first use from its family's template.
		b.call(t, "PUT", "/budgets/tenants", famTenants, http.StatusOK, nil)
		b.famJob(t, "nobody", `[{"key":"tenants/acme"}]`)
		sub := b.budget(t, "/budgets/tenants%2Facme?state=true")
		require.Equal(t, "tenants/acme", sub.Key)
		require.Equal(t, int64(2), sub.Allocation, "the template's allocation")
		require.Equal(t, api.Strategy{Type: api.StrategyWhileInFlight}, sub.Strategy)
		require.NotNil(t, sub.State)
		require.Equal(t, int64(2), sub.State.Capacity)
		b.fails(t, "GET", "/budgets/tenants/acme", "", http.StatusNotFound, "not found")
		b.call(t, "GET", "/budgets/tenants%2Facme/forecast", "", http.StatusOK, &f)
		require.Equal(t, "tenants/acme", f.Key)
		require.Equal(t, int64(1), f.Parked)
	})
}

// TestFamilies_List: GET /budgets lists families and plain budgets, never
// sub-budgets; ?parent= lists a family's live sub-budgets by key, and its
// state counts them.
func TestFamilies_List(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/tenants", famTenants, http.StatusOK, nil)
		b.call(t, "PUT", "/budgets/other", famPlain, http.StatusOK, nil)
		b.famJob(t, "q", `[{"key":"tenants/zeta"}]`)
		b.famJob(t, "q", `[{"key":"tenants/acme","cost":2}]`)
		b.famJob(t, "q", `[{"key":"tenants/acme"},{"key":"other"}]`)

		var list api.BudgetList
		b.call(t, "GET", "/budgets", "", http.StatusOK, &list)
		require.Equal(t, []string{"other", "tenants"}, famKeys(list.Budgets), "no sub-budget in the list")
		b.call(t, "GET", "/budgets?state=true", "", http.StatusOK, &list)
		require.Equal(t, []string{"other", "tenants"}, famKeys(list.Budgets))
		require.NotNil(t, list.Budgets[1].State.SubBudgets)
		require.Equal(t, int64(2), *list.Budgets[1].State.SubBudgets)
		require.Nil(t, list.Budgets[0].State.SubBudgets)

		b.call(t, "GET", "/budgets?parent=tenants", "", http.StatusOK, &list)
		require.Equal(t, []string{"tenants/acme", "tenants/zeta"}, famKeys(list.Budgets))
		for _, s := range list.Budgets {
			require.Nil(t, s.State, "no state unless asked")
			require.Equal(t, int64(2), s.Allocation)
		}
		// A taker: zeta's job and acme's first (cost 2, all of acme's pool)
		// go; acme's second parks in acme's line.
		ts := b.take(t, "queue=q&prefetch=10")
		defer ts.close()
		ts.next(t, budArrives)
		ts.next(t, budArrives)
		require.Eventually(t, func() bool {
			b.call(t, "GET", "/budgets?parent=tenants&state=true", "", http.StatusOK, &list)
			acme, zeta := list.Budgets[0].State, list.Budgets[1].State
			return acme.InFlight == 1 && acme.Held == 2 && acme.Parked == 1 && zeta.InFlight == 1 && zeta.Parked == 0
		}, 10*time.Second, 10*time.Millisecond, "acme: one in flight, one parked; zeta: one in flight")
		require.Equal(t, []string{"tenants/acme", "tenants/zeta"}, famKeys(list.Budgets))

		// Stats list what GET /budgets lists.
		var st api.Stats
		b.call(t, "GET", "/stats", "", http.StatusOK, &st)
		require.Equal(t, []string{"other", "tenants"}, famKeys(st.Budgets))

		// The job's budgets echo shows its bindings as sent.
		var j api.JobList
		b.call(t, "GET", "/jobs?budgets.key=tenants%2Facme", "", http.StatusOK, &j)
		require.Len(t, j.Jobs, 2)
		require.Equal(t, []api.Binding{{Key: "tenants/acme", Cost: 2}}, j.Jobs[0].Budgets)
		require.Equal(t, []api.Binding{{Key: "tenants/acme", Cost: 1}, {Key: "other", Cost: 1}}, j.Jobs[1].Budgets)
	})
}

func famKeys(bs []api.Budget) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, b.Key)
	}
	return out
}

// TestFamilies_Refusals: what the engine refuses of families, over HTTP,
// changing nothing.
func TestFamilies_Refusals(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/tenants", `{"allocation":10,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":3,"strategy":{"type":"time_based","duration_ms":1000,"burst":2}}}`, http.StatusOK, nil)
		job := b.famJob(t, "nobody", `[{"key":"tenants/acme","cost":2}]`)
		refused := func(method, path, body string, status int, pattern string) {
			t.Helper()
			before := b.snapshot(t, "/budgets/tenants%2Facme?state=true")
			b.failsLike(t, method, path, body, status, pattern)
			require.Equal(t, before, b.snapshot(t, "/budgets/tenants%2Facme?state=true"), "%s %s changed something", method, path)
		}
		// A sub-budget's key is the family's while no plain budget has it.
		for _, m := range []string{"PUT", "POST", "PATCH"} {
			refused(m, "/budgets/tenants%2Facme", famPlain, http.StatusConflict, `tenants/acme.*family|family.*tenants`)
			refused(m, "/budgets/tenants%2Fnew", famPlain, http.StatusConflict, `tenants/new.*family|family.*tenants`)
		}
		refused("DELETE", "/budgets/tenants%2Facme", "", http.StatusConflict, `tenants/acme.*family|family.*tenants`)
		// A family with bound jobs stays.
		refused("DELETE", "/budgets/tenants", "", http.StatusConflict, `tenants`)
		// A cost above the template's allocation or burst.
		refused("POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"tenants/b","cost":3}]}`, http.StatusUnprocessableEntity,
			`^job cost 3 exceeds budget 'tenants/b' burst 2$`)
		refused("POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"tenants/b","cost":4}]}`, http.StatusUnprocessableEntity,
			`^job cost 4 exceeds budget 'tenants/b' allocation 3$`)
		// The template below a bound job's cost, in the seed's words.
		refused("PATCH", "/budgets/tenants", `{"per_key":{"allocation":1}}`, http.StatusUnprocessableEntity,
			`^budget 'tenants(/acme)?' cannot allocate 1: 1 unfinished job draw up to 2 from it\. Raise the allocation, delete them, or wait for them to drain\.$`)
		refused("PATCH", "/budgets/tenants", `{"per_key":{"strategy":{"burst":1}}}`, http.StatusUnprocessableEntity,
			`^budget 'tenants(/acme)?' cannot burst 1: 1 unfinished job draw up to 2 from it\. Raise the burst, delete them, or wait for them to drain\.$`)
		// The family and one of its sub-budgets in one job.
		refused("POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"tenants"},{"key":"tenants/x"}]}`, http.StatusBadRequest, `tenants`)
		refused("POST", "/jobs", `{"type":"t","queue":"q","payload":{},"budgets":[{"key":"tenants/x"},{"key":"tenants"}]}`, http.StatusBadRequest, `tenants`)
		refused("PUT", "/jobs/"+job.ID+"/budgets", `{"budgets":[{"key":"tenants"},{"key":"tenants/acme"}]}`, http.StatusBadRequest, `tenants`)

		// A plain budget of a sub-key's name, made before the family,
		// stays plain and is managed as usual.
		b.call(t, "PUT", "/budgets/shop%2Feu", famPlain, http.StatusOK, nil)
		b.call(t, "PUT", "/budgets/shop", `{"allocation":5,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"while_in_flight"}}}`, http.StatusOK, nil)
		b.call(t, "PATCH", "/budgets/shop%2Feu", `{"allocation":4}`, http.StatusOK, nil)
		require.Equal(t, int64(4), b.budget(t, "/budgets/shop%2Feu").Allocation)
		b.call(t, "DELETE", "/budgets/shop%2Feu", "", http.StatusNoContent, nil)
	})
}

// TestFamilies_Why: why names the expected dispatch time; null where it
// waits for no time_based line.
func TestFamilies_Why(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/paced", `{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":1}}`, http.StatusOK, nil)
		jobs := b.famJobs(t, 3, "q", `[{"key":"paced"}]`)
		ts := b.take(t, "queue=q&prefetch=10")
		require.Equal(t, jobs[0].ID, ts.next(t, budArrives).ID)
		_, answer := b.send(t, "GET", "/jobs/"+jobs[0].ID+"/why", "")
		require.Contains(t, answer, `"expected_at":null`, "an in-flight job expects nothing")
		var w api.Why
		b.call(t, "GET", "/jobs/"+jobs[2].ID+"/why", "", http.StatusOK, &w)
		require.Equal(t, api.WaitingBudget, w.WaitingFor)
		require.NotNil(t, w.ExpectedAt, "a job in a time_based line has an expected time")
		require.Equal(t, famT0+200, *w.ExpectedAt, "two tokens of 100 ms away")

		// A paused budget without end: no estimate, and why says so.
		b.call(t, "PATCH", "/budgets/paced", `{"paused":true}`, http.StatusOK, nil)
		b.call(t, "GET", "/jobs/"+jobs[2].ID+"/why", "", http.StatusOK, &w)
		require.Nil(t, w.ExpectedAt)
		require.Equal(t, "budget 'paced' is paused", w.Reason)
		require.Len(t, w.Budgets, 1)
		require.True(t, w.Budgets[0].Paused)
		require.Nil(t, w.Budgets[0].PausedUntil)
		// With an end, the estimate starts there.
		b.call(t, "PATCH", "/budgets/paced", fmt.Sprintf(`{"paused_until":%d}`, famT0+10_000), http.StatusOK, nil)
		b.call(t, "GET", "/jobs/"+jobs[2].ID+"/why", "", http.StatusOK, &w)
		require.NotNil(t, w.ExpectedAt)
		require.GreaterOrEqual(t, *w.ExpectedAt, famT0+10_000)
		require.Equal(t, &[]int64{famT0 + 10_000}[0], w.Budgets[0].PausedUntil)
		require.Equal(t, "budget 'paced' is paused until 2026-05-01T12:00:10Z", w.Reason)
		// Resumed: the budget entry has Zizq's shape again.
		b.call(t, "PATCH", "/budgets/paced", `{"paused":false}`, http.StatusOK, nil)
		_, answer = b.send(t, "GET", "/jobs/"+jobs[2].ID+"/why", "")
		require.NotContains(t, answer, "paused")
	})
}

// famTags reads every job's fair tag from the store of a stopped server.
func famTags(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	db := servertest.OpenStore(t, dir)
	defer func() { require.NoError(t, db.Close()) }()
	jobs, _, err := db.ListJobs(ctx, store.Filter{}, "", store.Asc, 1000)
	require.NoError(t, err)
	tags := map[string]int64{}
	for _, j := range jobs {
		tags[j.ID] = j.FairTag
	}
	return tags
}

// famRestartFixture is a family and a budget paused for an hour.
func famRestartFixture(t *testing.T, b *famBundle) (family, paused string) {
	t.Helper()
	stamps := famStamps(famT0, famT0)
	until := famT0 + 3_600_000
	family = `{"key":"tenants","allocation":10,"strategy":{"type":"while_in_flight"},` +
		`"per_key":{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":10}},` + stamps + `}`
	paused = fmt.Sprintf(`{"key":"api","allocation":3,"strategy":{"type":"while_in_flight"},"paused":true,"paused_until":%d,%s}`, until, stamps)
	b.call(t, "PUT", "/budgets/tenants", `{"allocation":10,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":10,"strategy":{"type":"time_based","duration_ms":1000,"burst":10}}}`, http.StatusOK, nil)
	b.call(t, "PUT", "/budgets/api", fmt.Sprintf(`{"allocation":3,"strategy":{"type":"while_in_flight"},"paused":true,"paused_until":%d}`, until), http.StatusOK, nil)
	return family, paused
}

// TestFamilies_RestartKeepsConfigs: families and pauses survive a
// restart as they were written.
func TestFamilies_RestartKeepsConfigs(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		family, paused := famRestartFixture(t, b)
		b.restart(t)
		b.exact(t, "GET", "/budgets/tenants", "", http.StatusOK, family)
		b.exact(t, "GET", "/budgets/api", "", http.StatusOK, paused)
	})
}

// TestFamilies_RestartKeepsFairTags: a family job's tag after a restart is
// the one given at enqueue, and the order of dispatch follows it.
func TestFamilies_RestartKeepsFairTags(t *testing.T) {
	t.Parallel()
	b := famSetup(t, api.JSON)
	family, paused := famRestartFixture(t, b)
	// Tenant a enqueues six jobs, then tenant b two, a moment later; and a
	// job outside families.
	a := b.famJobs(t, 6, "q", `[{"key":"tenants/a"}]`)
	b.clk.Advance(time.Millisecond)
	bs := b.famJobs(t, 2, "q", `[{"key":"tenants/b"}]`)
	plain := b.famJob(t, "q", `[{"key":"api"}]`)

	b.stop()
	given := famTags(t, b.dir)
	for _, j := range append(a, bs...) {
		require.NotZero(t, given[j.ID], "job %s of a family has a tag", j.ID)
	}
	require.Zero(t, given[plain.ID], "a job outside families has none")
	b.restart(t)

	b.exact(t, "GET", "/budgets/tenants", "", http.StatusOK, family)
	b.exact(t, "GET", "/budgets/api", "", http.StatusOK, paused)
	var list api.BudgetList
	b.call(t, "GET", "/budgets?parent=tenants", "", http.StatusOK, &list)
	require.Equal(t, []string{"tenants/a", "tenants/b"}, famKeys(list.Budgets), "the sub-budgets of bound jobs come back")

	// Everything is affordable: one worker receives the family's jobs in
	// the one order, (priority, tag, id), with the tags given at enqueue.
	famJobsIDs := make([]string, 0, 8)
	for _, j := range append(a, bs...) {
		famJobsIDs = append(famJobsIDs, j.ID)
	}
	want := slices.Clone(famJobsIDs)
	slices.SortStableFunc(want, func(x, y string) int { return cmp.Or(cmp.Compare(given[x], given[y]), cmp.Compare(x, y)) })
	require.NotEqual(t, famJobsIDs, want, "b's tags put its jobs among a's")
	ts := b.take(t, "queue=q&prefetch=20")
	var got []string
	for range want {
		got = append(got, ts.next(t, budArrives).ID)
	}
	require.Equal(t, want, got)
	ts.none(t, 100*time.Millisecond) // the paused budget's job stays

	ts.close()
	b.stop()
	require.Equal(t, given, famTags(t, b.dir), "tags never change")
}
