package client_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// recorded is one request a fake server received.
type recorded struct {
	method, path, contentType string
	body                      []byte
}

// recorder is a fake zizq server that keeps every request and answers
// each with answer (an empty 204 when answer is nil).
type recorder struct {
	mu     sync.Mutex
	reqs   []recorded
	answer func(r *http.Request) (int, string)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, recorded{method: r.Method, path: r.URL.Path, contentType: r.Header.Get("Content-Type"), body: body})
	answer := rec.answer
	rec.mu.Unlock()
	if answer == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	status, out := answer(r)
	w.Header().Set("Content-Type", api.MediaJSON)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, out)
}

// last returns the last request, and forgets every one.
func (rec *recorder) last(t *testing.T) recorded {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.NotEmpty(t, rec.reqs)
	r := rec.reqs[len(rec.reqs)-1]
	rec.reqs = nil
	return r
}

// fakeClient is a client in format f of a new recorder.
func fakeClient(t *testing.T, f api.Format) (*client.Client, *recorder) {
	t.Helper()
	rec := &recorder{}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL, client.Options{Format: f, Retries: -1})
	require.NoError(t, err)
	return c, rec
}

// decodeAs reads a recorded body in format f into a new T.
func decodeAs[T any](t *testing.T, f api.Format, r recorded) T {
	t.Helper()
	require.Equal(t, api.ContentType(f), r.contentType)
	var v T
	require.NoError(t, api.Unmarshal(f, r.body, &v), "body %q", r.body)
	return v
}

// TestClient_SettleWire: what the acks send, against a fake server. Ack
// and AckWith without settles send no body at all (the server's "the
// estimate was right"); AckWith sends {"budgets":[…]}; AckBulk leaves
// "budgets" out, AckBulkWith keys it by job ID; Fail carries its Budgets
// beside the failure.
func TestClient_SettleWire(t *testing.T) {
	t.Parallel()
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			c, rec := fakeClient(t, f.f)
			ctx := ctxT(t)
			settles := []api.Settle{client.Settle("openai-tpm", 1834), client.Settle("zero", 0)}

			require.NoError(t, c.Ack(ctx, "a/b"))
			r := rec.last(t)
			require.Equal(t, "POST", r.method)
			require.Equal(t, "/jobs/a/b/success", r.path)
			require.Empty(t, r.body, "a plain ack has no body")
			require.Empty(t, r.contentType)
			require.NoError(t, c.AckWith(ctx, "j1", nil))
			require.Empty(t, rec.last(t).body, "no settles, no body")
			require.NoError(t, c.AckWith(ctx, "j1", []api.Settle{}))
			require.Empty(t, rec.last(t).body)

			require.NoError(t, c.AckWith(ctx, "j1", settles))
			r = rec.last(t)
			require.Equal(t, "/jobs/j1/success", r.path)
			got := decodeAs[map[string][]map[string]any](t, f.f, r)
			require.Equal(t, map[string][]map[string]any{"budgets": {
				{"key": "openai-tpm", "cost": float64(1834)}, {"key": "zero", "cost": float64(0)},
			}}, got, "a cost of 0 is sent, not left out")

			_, err := c.AckBulk(ctx, []string{"j1", "j2"})
			require.NoError(t, err)
			r = rec.last(t)
			require.Equal(t, "/jobs/success", r.path)
			require.Equal(t, map[string]any{"ids": []any{"j1", "j2"}}, decodeAs[map[string]any](t, f.f, r))

			_, err = c.AckBulkWith(ctx, []string{"j1", "j2"}, map[string][]api.Settle{"j2": settles[:1]})
			require.NoError(t, err)
			bulk := decodeAs[api.AckIDs](t, f.f, rec.last(t))
			require.Equal(t, []string{"j1", "j2"}, bulk.IDs)
			require.Equal(t, map[string][]api.Settle{"j2": settles[:1]}, bulk.Budgets)

			rec.answer = func(*http.Request) (int, string) {
				return http.StatusOK, `{"id":"j1","type":"t","queue":"q","priority":1,"status":"scheduled","ready_at":1,"attempts":1}`
			}
			j, err := c.Fail(ctx, "j1", api.FailureRequest{Message: api.Ptr("boom"), Budgets: settles[:1]})
			require.NoError(t, err)
			require.Equal(t, api.StatusScheduled, j.Status)
			r = rec.last(t)
			require.Equal(t, "/jobs/j1/failure", r.path)
			fail := decodeAs[api.FailureRequest](t, f.f, r)
			require.Equal(t, "boom", *fail.Message)
			require.Equal(t, settles[:1], fail.Budgets)
		})
	}
}

// TestClient_CalendarWire: a calendar strategy's reset and timezone go
// out with create and put (api.StrategyInput) and with PatchBudget
// (api.StrategyPatch), in both formats.
func TestClient_CalendarWire(t *testing.T) {
	t.Parallel()
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			c, rec := fakeClient(t, f.f)
			rec.answer = func(*http.Request) (int, string) {
				return http.StatusOK, `{"key":"tpd","allocation":100000,"strategy":{"type":"calendar","reset":"0 0 * * *","timezone":"Europe/Paris"},"created_at":1,"updated_at":1}`
			}
			ctx := ctxT(t)
			in := api.BudgetInput{Allocation: api.Ptr[int64](100000), Strategy: &api.StrategyInput{
				Type: api.Ptr(api.StrategyCalendar), Reset: api.Ptr("0 0 * * *"), Timezone: api.Ptr("Europe/Paris")}}
			b, err := c.CreateBudget(ctx, "tpd", in)
			require.NoError(t, err)
			require.Equal(t, api.Strategy{Type: api.StrategyCalendar, Reset: "0 0 * * *", Timezone: "Europe/Paris"}, b.Strategy)
			wantStrategy := map[string]any{"type": "calendar", "reset": "0 0 * * *", "timezone": "Europe/Paris"}
			r := rec.last(t)
			require.Equal(t, "POST", r.method)
			require.Equal(t, wantStrategy, decodeAs[map[string]any](t, f.f, r)["strategy"])
			_, err = c.PutBudget(ctx, "tpd", in)
			require.NoError(t, err)
			r = rec.last(t)
			require.Equal(t, "PUT", r.method)
			require.Equal(t, wantStrategy, decodeAs[map[string]any](t, f.f, r)["strategy"])

			_, err = c.PatchBudget(ctx, "tpd", api.BudgetPatch{Allocation: api.Ptr[int64](5),
				Strategy: &api.StrategyPatch{Reset: api.Ptr("0 * * * *"), Timezone: api.Ptr("")}})
			require.NoError(t, err)
			r = rec.last(t)
			require.Equal(t, "PATCH", r.method)
			require.Equal(t, "/budgets/tpd", r.path)
			require.Equal(t, map[string]any{
				"allocation": float64(5),
				"strategy":   map[string]any{"reset": "0 * * * *", "timezone": ""},
			}, decodeAs[map[string]any](t, f.f, r), "only what was given; an empty timezone (UTC) is sent")

			_, err = c.PatchBudget(ctx, "tpd", api.BudgetPatch{
				Strategy: &api.StrategyPatch{Type: api.Ptr(api.StrategyCalendar), Burst: api.Null[int64](),
					Reset: api.Ptr("0 0 1 * *"), Timezone: api.Ptr("Asia/Tokyo")},
				PerKey: api.Set(api.TemplatePatch{Allocation: api.Ptr[int64](2), Strategy: &api.StrategyPatch{DurationMs: api.Ptr[int64](60000)}}),
				Paused: api.Set(true),
			})
			require.NoError(t, err)
			require.Equal(t, map[string]any{
				"strategy": map[string]any{"type": "calendar", "burst": nil, "reset": "0 0 1 * *", "timezone": "Asia/Tokyo"},
				"per_key":  map[string]any{"allocation": float64(2), "strategy": map[string]any{"duration_ms": float64(60000)}},
				"paused":   true,
			}, decodeAs[map[string]any](t, f.f, rec.last(t)), "reset and timezone beside the patch's other members")

			_, err = c.PatchBudget(ctx, "tpd", api.BudgetPatch{Strategy: &api.StrategyPatch{Burst: api.Set[int64](4)}})
			require.NoError(t, err)
			require.Equal(t, map[string]any{"strategy": map[string]any{"burst": float64(4)}}, decodeAs[map[string]any](t, f.f, rec.last(t)),
				"no reset or timezone member when none is given")
		})
	}
}

// The tests below need the server of issue 25 (settles, calendar
// budgets); against a server without it they fail.

// TestClient_Settle: a time_based budget of 100 an hour, a job bound at
// cost 100 (the estimate) acked with its real cost 20: the 80 not spent
// come back at once. A failure settled at 150 puts its budget 50 in debt;
// a bulk ack settles only the jobs it names.
func TestClient_Settle(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		hourly := func(key string) {
			_, err := tb.c.PutBudget(ctx, key, api.BudgetInput{Allocation: api.Ptr[int64](100), Strategy: &api.StrategyInput{
				Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr[int64](3_600_000)}})
			require.NoError(t, err)
		}
		for _, k := range []string{"credit", "debt", "bulk"} {
			hourly(k)
		}
		credit, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("credit", 100)))
		require.NoError(t, err)
		debt, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("debt", 100)))
		require.NoError(t, err)
		b1, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("bulk", 50)))
		require.NoError(t, err)
		b2, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("bulk", 50)))
		require.NoError(t, err)
		s, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}, Prefetch: 4})
		require.NoError(t, err)
		defer s.Close()
		for range 4 {
			_, err := s.Next()
			require.NoError(t, err)
		}

		require.NoError(t, tb.c.AckWith(ctx, credit.ID, []api.Settle{client.Settle("credit", 20)}))
		st := budgetState(t, tb, "credit")
		require.InDelta(t, 80, st.Available, 1, "100 bound, 20 spent")
		require.Nil(t, st.Debt)
		require.Equal(t, &api.Settled{Count: 1, Credited: 80}, st.Settled)
		require.NotNil(t, st.CostRatio)
		require.InDelta(t, 0.2, *st.CostRatio, 0.001)

		_, err = tb.c.Fail(ctx, debt.ID, api.FailureRequest{Message: api.Ptr("over"), Kill: api.Ptr(true), Budgets: []api.Settle{client.Settle("debt", 150)}})
		require.NoError(t, err)
		st = budgetState(t, tb, "debt")
		require.InDelta(t, -50, st.Available, 1, "a failure settles too")
		require.NotNil(t, st.Debt)
		require.InDelta(t, 50, *st.Debt, 1)
		require.NotNil(t, st.RepaidAt)
		require.InDelta(t, time.Now().Add(30*time.Minute).UnixMilli(), *st.RepaidAt, float64(time.Minute.Milliseconds()), "50 tokens at 100 an hour")
		require.Equal(t, &api.Settled{Count: 1, Debited: 50}, st.Settled)

		nf, err := tb.c.AckBulkWith(ctx, []string{b1.ID, b2.ID}, map[string][]api.Settle{b2.ID: {client.Settle("bulk", 10)}})
		require.NoError(t, err)
		require.Empty(t, nf)
		st = budgetState(t, tb, "bulk")
		require.InDelta(t, 40, st.Available, 1, "b1 kept its estimate, b2 gave back 40")
		require.Equal(t, &api.Settled{Count: 1, Credited: 40}, st.Settled)
	})
}

// TestClient_CalendarBudget: a calendar budget reads back its reset and
// timezone, counts what it spent this period and says when it resets;
// PatchBudget moves its resets.
func TestClient_CalendarBudget(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		b, err := tb.c.CreateBudget(ctx, "tpd", api.BudgetInput{Allocation: api.Ptr[int64](1000), Strategy: &api.StrategyInput{
			Type: api.Ptr(api.StrategyCalendar), Reset: api.Ptr("0 0 * * *"), Timezone: api.Ptr("Europe/Paris")}})
		require.NoError(t, err)
		require.Equal(t, api.Strategy{Type: api.StrategyCalendar, Reset: "0 0 * * *", Timezone: "Europe/Paris"}, b.Strategy)

		j, err := tb.c.Enqueue(ctx, job("q", "t", "", bind("tpd", 300)))
		require.NoError(t, err)
		s, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Next()
		require.NoError(t, err)
		require.NoError(t, tb.c.AckWith(ctx, j.ID, []api.Settle{client.Settle("tpd", 250)}))

		st := budgetState(t, tb, "tpd")
		require.NotNil(t, st.Used)
		require.Equal(t, int64(250), *st.Used)
		require.InDelta(t, 750, st.Available, 0.001)
		require.NotNil(t, st.NextResetAt)
		paris, err := time.LoadLocation("Europe/Paris")
		require.NoError(t, err)
		now := time.Now().In(paris)
		midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, paris)
		require.Equal(t, midnight.UnixMilli(), *st.NextResetAt)

		// An empty timezone clears it; the server answers the default, UTC.
		b, err = tb.c.PatchBudget(ctx, "tpd", api.BudgetPatch{Strategy: &api.StrategyPatch{Reset: api.Ptr("0 * * * *"), Timezone: api.Ptr("")}})
		require.NoError(t, err)
		require.Equal(t, api.Strategy{Type: api.StrategyCalendar, Reset: "0 * * * *", Timezone: "UTC"}, b.Strategy)
		st = budgetState(t, tb, "tpd")
		require.Equal(t, time.Now().UTC().Truncate(time.Hour).Add(time.Hour).UnixMilli(), *st.NextResetAt)
	})
}

func budgetState(t *testing.T, tb *testBundle, key string) *api.BudgetState {
	t.Helper()
	b, err := tb.c.GetBudget(ctxT(t), key, true)
	require.NoError(t, err)
	require.NotNil(t, b.State)
	return b.State
}
