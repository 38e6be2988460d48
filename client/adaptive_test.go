package client_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/client"
)

// TestClient_ThrottleWire: what Throttle and a throttled Fail send, and
// the adaptive members of budget bodies, against a fake server. A
// Throttle without a retry-after sends an empty object; one of a
// fraction of a millisecond is rounded up, not lost.
func TestClient_ThrottleWire(t *testing.T) {
	t.Parallel()
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			c, rec := fakeClient(t, f.f)
			ctx := ctxT(t)
			rec.answer = func(*http.Request) (int, string) {
				return http.StatusOK, `{"key":"api","allocation":10,"strategy":{"type":"time_based","duration_ms":1000},` +
					`"adaptive":{"decrease":0.5,"recover_ms":60000,"floor":0.05},"created_at":1,"updated_at":1,` +
					`"state":{"available":0,"capacity":10,"in_flight":0,"held":0,"parked":0,"oldest_parked_ms":null,"next_token_at":null,"dispatched":0,` +
					`"effective_allocation":5,"throttled_until":1700000030000,"throttles":1}}`
			}

			b, err := c.Throttle(ctx, "a/b", 0)
			require.NoError(t, err)
			r := rec.last(t)
			require.Equal(t, "POST", r.method)
			require.Equal(t, "/budgets/a/b/throttle", r.path)
			require.Equal(t, map[string]any{}, decodeAs[map[string]any](t, f.f, r), "no retry-after: an empty object")
			require.Equal(t, &api.Adaptive{Decrease: 0.5, RecoverMs: 60000, Floor: 0.05}, b.Adaptive)
			require.Equal(t, 5.0, *b.State.EffectiveAllocation)
			require.Equal(t, int64(1700000030000), *b.State.ThrottledUntil)
			require.Equal(t, int64(1), *b.State.Throttles)

			_, err = c.Throttle(ctx, "api", 30*time.Second)
			require.NoError(t, err)
			require.Equal(t, map[string]any{"retry_after_ms": float64(30000)}, decodeAs[map[string]any](t, f.f, rec.last(t)))
			_, err = c.Throttle(ctx, "api", 1500*time.Microsecond)
			require.NoError(t, err)
			require.Equal(t, map[string]any{"retry_after_ms": float64(2)}, decodeAs[map[string]any](t, f.f, rec.last(t)), "rounded up")

			_, err = c.CreateBudget(ctx, "api", api.BudgetInput{Allocation: api.Ptr[int64](10),
				Strategy: &api.StrategyInput{Type: api.Ptr(api.StrategyWhileInFlight)},
				Adaptive: &api.AdaptiveInput{Floor: api.Ptr(0.2)}})
			require.NoError(t, err)
			require.Equal(t, map[string]any{"floor": 0.2}, decodeAs[map[string]any](t, f.f, rec.last(t))["adaptive"], "only the fields given")
			_, err = c.PatchBudget(ctx, "api", api.BudgetPatch{Adaptive: api.Set(api.AdaptivePatch{RecoverMs: api.Ptr[int64](5000)})})
			require.NoError(t, err)
			require.Equal(t, map[string]any{"adaptive": map[string]any{"recover_ms": float64(5000)}}, decodeAs[map[string]any](t, f.f, rec.last(t)))
			_, err = c.PatchBudget(ctx, "api", api.BudgetPatch{Adaptive: api.Null[api.AdaptivePatch]()})
			require.NoError(t, err)
			require.Equal(t, map[string]any{"adaptive": nil}, decodeAs[map[string]any](t, f.f, rec.last(t)), "null removes it")

			rec.answer = func(*http.Request) (int, string) {
				return http.StatusOK, `{"id":"j1","type":"t","queue":"q","priority":1,"status":"scheduled","ready_at":1,"attempts":1}`
			}
			_, err = c.Fail(ctx, "j1", api.FailureRequest{Message: api.Ptr("429"), Budgets: []api.Settle{client.Settle("api", 3)},
				Throttle: &api.Throttle{Budget: api.Ptr("api"), RetryAfterMs: api.Ptr[int64](1000)}})
			require.NoError(t, err)
			require.Equal(t, map[string]any{
				"message":  "429",
				"budgets":  []any{map[string]any{"key": "api", "cost": float64(3)}},
				"throttle": map[string]any{"budget": "api", "retry_after_ms": float64(1000)},
			}, decodeAs[map[string]any](t, f.f, rec.last(t)), "the throttle beside the settles")
		})
	}
}

// The test below needs the server of issue 26 (adaptive budgets).

// TestClient_Adaptive: an adaptive budget reads back its back-off, with
// the defaults for what was left out; Throttle halves its effective
// allocation and stops it for the retry-after; a failure's throttle
// counts one more refusal and retries the job without counting it; a
// patch merges the back-off and null removes it.
func TestClient_Adaptive(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, tb *testBundle) {
		ctx := ctxT(t)
		b, err := tb.c.PutBudget(ctx, "api", api.BudgetInput{Allocation: api.Ptr[int64](100), Strategy: &api.StrategyInput{
			Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr[int64](1000)},
			Adaptive: &api.AdaptiveInput{Floor: api.Ptr(0.2)}})
		require.NoError(t, err)
		require.Equal(t, &api.Adaptive{Decrease: 0.5, RecoverMs: 60000, Floor: 0.2}, b.Adaptive)

		before := time.Now()
		b, err = tb.c.Throttle(ctx, "api", 30*time.Second)
		require.NoError(t, err)
		require.NotNil(t, b.State, "the answer has the live figures")
		require.Equal(t, int64(1), *b.State.Throttles)
		require.InDelta(t, 50, *b.State.EffectiveAllocation, 0.5)
		require.NotNil(t, b.State.ThrottledUntil)
		require.InDelta(t, before.Add(30*time.Second).UnixMilli(), *b.State.ThrottledUntil, 2000)

		_, err = tb.c.Throttle(ctx, "nope", 0)
		require.True(t, client.IsNotFound(err), "%v", err)
		_, err = tb.c.Throttle(ctx, "api", 48*time.Hour)
		require.True(t, client.IsValidation(err), "more than a day: %v", err)

		_, err = tb.c.PutBudget(ctx, "conc", api.BudgetInput{Allocation: api.Ptr[int64](4), Strategy: &api.StrategyInput{
			Type: api.Ptr(api.StrategyWhileInFlight)}, Adaptive: &api.AdaptiveInput{}})
		require.NoError(t, err)
		j, err := tb.c.Enqueue(ctx, api.EnqueueRequest{Queue: api.Ptr("q"), Type: api.Ptr("t"), Payload: api.Payload("null"),
			RetryLimit: api.Ptr[uint32](0), Budgets: []api.BindingRequest{bind("conc", 1)}})
		require.NoError(t, err)
		s, err := tb.c.Take(ctx, client.TakeOptions{Queues: []string{"q"}})
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Next()
		require.NoError(t, err)
		failed, err := tb.c.Fail(ctx, j.ID, api.FailureRequest{Message: api.Ptr("429"),
			Throttle: &api.Throttle{Budget: api.Ptr("conc")}})
		require.NoError(t, err)
		require.Equal(t, api.StatusScheduled, failed.Status, "a throttled failure does not count toward retry_limit 0")
		st := budgetState(t, tb, "conc")
		require.Equal(t, int64(1), *st.Throttles)
		require.InDelta(t, 2, *st.EffectiveAllocation, 0.01)

		b, err = tb.c.PatchBudget(ctx, "conc", api.BudgetPatch{Adaptive: api.Set(api.AdaptivePatch{Decrease: api.Ptr(0.25)})})
		require.NoError(t, err)
		require.Equal(t, &api.Adaptive{Decrease: 0.25, RecoverMs: 60000, Floor: 0.05}, b.Adaptive, "merged")
		b, err = tb.c.PatchBudget(ctx, "conc", api.BudgetPatch{Adaptive: api.Null[api.AdaptivePatch]()})
		require.NoError(t, err)
		require.Nil(t, b.Adaptive)
	})
}
