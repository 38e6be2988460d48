package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// Bad settles and calendar bodies (issue 25): a clear 4xx naming the
// field, and nothing changes.

// settleFixture: budgets "rate" (time_based, slow), "conc"
// (while_in_flight) and a job bound to both, in flight.
func settleFixture(t *testing.T) (*testBundle, api.Job) {
	tb := setup(t)
	tb.budPut(t, "rate", `{"allocation":100,"strategy":{"type":"time_based","duration_ms":3600000}}`)
	tb.budPut(t, "conc", `{"allocation":5,"strategy":{"type":"while_in_flight"}}`)
	j := tb.budJob(t, "q", `[{"key":"rate","cost":40},{"key":"conc"}]`)
	ts := tb.take(t, "prefetch=0")
	require.Equal(t, j.ID, ts.next(t, budArrives).ID)
	return tb, j
}

func TestSettleHTTP_Refusals(t *testing.T) {
	t.Parallel()
	tb, j := settleFixture(t)
	before := tb.budState(t, "rate")
	for _, tc := range []struct {
		name, path, body string
		status           int
		msg              string
	}{
		{"Unbound", "/success", `{"budgets":[{"key":"rate","cost":1},{"key":"other","cost":1}]}`, 422,
			"job " + j.ID + " is not bound to budget 'other': budgets[1].key must name one of its budgets"},
		{"WhileInFlight", "/success", `{"budgets":[{"key":"conc","cost":1}]}`, 422,
			"budget 'conc' is while_in_flight: its tokens come back when job " + j.ID + " finishes, so it has no cost to settle (budgets[0])"},
		{"Twice", "/success", `{"budgets":[{"key":"rate","cost":1},{"key":"rate","cost":2}]}`, 422,
			"budgets names budget 'rate' twice for job " + j.ID},
		{"Negative", "/success", `{"budgets":[{"key":"rate","cost":-1}]}`, 400, "budgets[0].cost must be at least 0"},
		{"NoCost", "/success", `{"budgets":[{"key":"rate"}]}`, 400, "budgets[0].cost is required"},
		{"NoKey", "/success", `{"budgets":[{"cost":3}]}`, 400, "budgets[0].key is required"},
		{"FailureUnbound", "/failure", `{"message":"x","budgets":[{"key":"nope","cost":1}]}`, 422,
			"job " + j.ID + " is not bound to budget 'nope': budgets[0].key must name one of its budgets"},
		{"FailureNegative", "/failure", `{"message":"x","budgets":[{"key":"rate","cost":-5}]}`, 400, "budgets[0].cost must be at least 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budError(t, tb.req(t, "POST", "/jobs/"+j.ID+tc.path, tc.body), tc.status, tc.msg)
		})
	}
	r := tb.req(t, "POST", "/jobs/"+j.ID+"/success", `{"budgets":[{"key":"rate","cost":1.5}]}`)
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	require.Contains(t, r.errorText(t), "cost")

	// Nothing changed: the job is still in flight, the budget as it was.
	var got api.Job
	tb.req(t, "GET", "/jobs/"+j.ID, nil).json(t, &got)
	require.Equal(t, "in_flight", got.Status)
	after := tb.budState(t, "rate")
	require.Nil(t, after.Settled)
	require.InDelta(t, before.Available, after.Available, 0.01)

	// A good settle then works, and a second one finds nothing in flight.
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+j.ID+"/success", `{"budgets":[{"key":"rate","cost":0}]}`).status)
	require.InDelta(t, before.Available+40, tb.budState(t, "rate").Available, 0.1)
	budError(t, tb.req(t, "POST", "/jobs/"+j.ID+"/success", `{"budgets":[{"key":"rate","cost":0}]}`), 404, "job not found in in-flight set")
}

// TestSettleHTTP_Bulk: the bulk success settles by job ID; a settle of a
// job not in ids, or a refused one, refuses the whole request.
func TestSettleHTTP_Bulk(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "rate", `{"allocation":100,"strategy":{"type":"time_based","duration_ms":3600000}}`)
	jobs := tb.budJobs(t, 3, "q", `[{"key":"rate","cost":30}]`)
	ts := tb.take(t, "prefetch=0")
	for _, j := range jobs {
		require.Equal(t, j.ID, ts.next(t, budArrives).ID)
	}
	a, b, c := jobs[0].ID, jobs[1].ID, jobs[2].ID
	budError(t, tb.req(t, "POST", "/jobs/success", `{"ids":["`+a+`"],"budgets":{"`+b+`":[{"key":"rate","cost":1}]}}`),
		422, "budgets."+b+": job "+b+" is not in ids")
	budError(t, tb.req(t, "POST", "/jobs/success", `{"ids":["`+a+`","`+b+`"],"budgets":{"`+a+`":[{"key":"rate","cost":1}],"`+b+`":[{"key":"x","cost":1}]}}`),
		422, "job "+b+" is not bound to budget 'x': budgets[0].key must name one of its budgets")
	for _, j := range jobs {
		require.Equal(t, "in_flight", jobByID(t, tb, j.ID).Status, "nothing acked")
	}
	// The store's count too: its barrier writes the dispatch marks.
	require.Equal(t, int64(3), tb.budCount(t, "status=in_flight"))
	require.Nil(t, tb.budState(t, "rate").Settled, "nothing settled")

	// a at 0, b at 60, c without a settle: 100 − 90 + 30 − 30.
	r := tb.req(t, "POST", "/jobs/success", `{"ids":["`+a+`","`+b+`","`+c+`"],"budgets":{"`+a+`":[{"key":"rate","cost":0}],"`+b+`":[{"key":"rate","cost":60}]}}`)
	require.Equal(t, http.StatusNoContent, r.status, "body: %s", r.body)
	st := tb.budState(t, "rate")
	require.InDelta(t, 10, st.Available, 0.1)
	require.Equal(t, &api.Settled{Count: 2, Credited: 30, Debited: 30}, st.Settled)
	require.InDelta(t, 1.0, *st.CostRatio, 0.05, "0 and 2: a mean near 1")
}

// TestSettleHTTP_NoBodyStillWorks: Zizq's clients send no body, or an
// empty one with a content type.
func TestSettleHTTP_NoBodyStillWorks(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	jobs := tb.budJobs(t, 2, "q", `[]`)
	ts := tb.take(t, "prefetch=0")
	ts.next(t, budArrives)
	ts.next(t, budArrives)
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+jobs[0].ID+"/success", nil).status)
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+jobs[1].ID+"/success", "").status)
}

func TestCalendarHTTP_Refusals(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, tc := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"NoReset", `{"allocation":5,"strategy":{"type":"calendar"}}`, 400, "invalid JSON: missing field `reset`"},
		{"BadReset", `{"allocation":5,"strategy":{"type":"calendar","reset":"every day"}}`, 422, ""},
		{"BadZone", `{"allocation":5,"strategy":{"type":"calendar","reset":"0 0 * * *","timezone":"Mars/Olympus"}}`, 422, ""},
		{"Unknown", `{"allocation":5,"strategy":{"type":"calendar","reset":"0 0 * * *","rest":"x"}}`, 422,
			"strategy.rest is not a field of a strategy (expected one of type, duration_ms, burst, reset, timezone)"},
		{"UnknownTimeBased", `{"allocation":5,"strategy":{"type":"time_based","duration_ms":5,"brust":2}}`, 422,
			"strategy.brust is not a field of a strategy (expected one of type, duration_ms, burst, reset, timezone)"},
		{"ResetOnTimeBased", `{"allocation":5,"strategy":{"type":"time_based","duration_ms":5,"reset":"0 0 * * *"}}`, 422,
			"reset and timezone are only valid for calendar budgets"},
		{"DurationOnCalendar", `{"allocation":5,"strategy":{"type":"calendar","reset":"0 0 * * *","duration_ms":5}}`, 422,
			"duration_ms is only valid for time_based budgets"},
		{"FamilyTemplate", `{"allocation":5,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"calendar","reset":"0 0 * * *"}}}`, 422,
			"per_key.strategy.type calendar is not supported: a family's sub-budgets are time_based or while_in_flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tb.req(t, "PUT", "/budgets/c", tc.body)
			if tc.msg != "" {
				budError(t, r, tc.status, tc.msg)
				return
			}
			require.Equal(t, tc.status, r.status, "body: %s", r.body)
			switch tc.name {
			case "BadReset":
				require.Contains(t, r.errorText(t), "strategy.reset")
			case "BadZone":
				require.Contains(t, r.errorText(t), "strategy.timezone")
				require.Contains(t, r.errorText(t), "Mars/Olympus")
			}
		})
	}
	require.Equal(t, http.StatusNotFound, tb.req(t, "GET", "/budgets/c", nil).status, "nothing was created")

	// PATCH: a bad expression changes nothing; a good one keeps what was
	// spent this period.
	tb.budPut(t, "c", `{"allocation":10,"strategy":{"type":"calendar","reset":"0 0 1 * *"}}`)
	j := tb.budJob(t, "q", `[{"key":"c","cost":4}]`)
	ts := tb.take(t, "prefetch=0")
	require.Equal(t, j.ID, ts.next(t, budArrives).ID)
	r := tb.req(t, "PATCH", "/budgets/c", `{"strategy":{"reset":"not cron"}}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "body: %s", r.body)
	require.Contains(t, r.errorText(t), "strategy.reset")
	r = tb.req(t, "PATCH", "/budgets/c", `{"strategy":{"reset":"0 0 * * MON","timezone":"America/New_York"}}`)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	st := tb.budState(t, "c")
	require.Equal(t, int64(4), *st.Used, "a new reset keeps what was spent")
	next := time.UnixMilli(*st.NextResetAt).In(mustZone(t, "America/New_York"))
	require.Equal(t, time.Monday, next.Weekday())
	require.Equal(t, 0, next.Hour())
	r = tb.req(t, "PATCH", "/budgets/c", `{"strategy":{"type":"calendar","brust":1}}`)
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "body: %s", r.body)
}

func mustZone(t *testing.T, name string) *time.Location {
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// TestCalendarHTTP_Restart: a restart does not refill a calendar budget;
// a time_based one beside it restarts full.
func TestCalendarHTTP_Restart(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "month", `{"allocation":100,"strategy":{"type":"calendar","reset":"0 0 1 * *"}}`)
	jobs := tb.budJobs(t, 3, "q", `[{"key":"month","cost":7}]`)
	ts := tb.take(t, "prefetch=0")
	for _, j := range jobs {
		require.Equal(t, j.ID, ts.next(t, budArrives).ID)
	}
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+jobs[0].ID+"/success", settleBody("month", 30)).status)
	require.Equal(t, int64(44), *tb.budState(t, "month").Used, "30 + 7 + 7")
	ts.close()
	tb.stop()

	tb = setupIn(t, tb.dir)
	st := tb.budState(t, "month")
	require.Equal(t, int64(44), *st.Used, "spent survives the restart")
	require.Equal(t, 56.0, st.Available)
}

// TestCalendarHTTP_Forecast: a calendar backlog beyond what is left of the
// period drains at a reset, and the forecast says which; a time_based
// forecast counts the debt.
func TestCalendarHTTP_Forecast(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budPut(t, "month", `{"allocation":3,"strategy":{"type":"calendar","reset":"0 0 1 * *"}}`)
	tb.budJobs(t, 8, "q", `[{"key":"month"}]`)
	var f api.Forecast
	r := tb.req(t, "GET", "/budgets/month/forecast", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	r.json(t, &f)
	require.Equal(t, int64(8), f.Parked)
	// 3 now, 3 more at the next reset, the last 2 at the one after.
	now := time.Now().UTC()
	second := time.Date(now.Year(), now.Month()+2, 1, 0, 0, 0, 0, time.UTC)
	require.NotNil(t, f.DrainsAt)
	require.Equal(t, second.UnixMilli(), *f.DrainsAt)
	require.Equal(t, int64(2), f.Resets)
	require.False(t, f.Estimated)

	tb.budPut(t, "tpm", `{"allocation":100,"strategy":{"type":"time_based","duration_ms":1000}}`)
	first := tb.budJob(t, "r", `[{"key":"tpm","cost":100}]`)
	ts := tb.take(t, "prefetch=1&queue=r")
	got := ts.next(t, budArrives)
	require.Equal(t, first.ID, got.ID)
	require.Equal(t, http.StatusNoContent, tb.req(t, "POST", "/jobs/"+first.ID+"/success", settleBody("tpm", 300)).status)
	tb.budJob(t, "r", `[{"key":"tpm","cost":50}]`)
	f = api.Forecast{}
	tb.req(t, "GET", "/budgets/tpm/forecast", nil).json(t, &f)
	require.NotNil(t, f.DrainsAt)
	// Empty at t0, 200 owed, 50 to pay: 2.5 s of drip after t0.
	require.InDelta(t, int64(got.DequeuedAt)+2500, *f.DrainsAt, 2)
	require.Zero(t, f.Resets)
}
