package server

import (
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// maxRetryAfterMs bounds a refusal's retry_after: a day. An upstream that
// asks for longer is better paused by an operator.
const maxRetryAfterMs = 24 * 3600 * 1000

// adaptiveConfig merges an adaptive member into cur (nil: the defaults)
// and checks the result; its errors are value rules (422).
func adaptiveConfig(cur *store.Adaptive, in *api.AdaptiveInput) (*store.Adaptive, error) {
	a := store.Adaptive{Decrease: api.DefaultAdaptiveDecrease, RecoverMs: api.DefaultAdaptiveRecoverMs, Floor: api.DefaultAdaptiveFloor}
	if cur != nil {
		a = *cur
	}
	if in.Decrease != nil {
		a.Decrease = *in.Decrease
	}
	if in.RecoverMs != nil {
		a.RecoverMs = *in.RecoverMs
	}
	if in.Floor != nil {
		a.Floor = *in.Floor
	}
	switch {
	case !(a.Decrease > 0 && a.Decrease < 1):
		return nil, ruleErrorf("adaptive.decrease must be above 0 and below 1: %g", a.Decrease)
	case !(a.Floor > 0 && a.Floor <= 1):
		return nil, ruleErrorf("adaptive.floor must be above 0 and at most 1: %g", a.Floor)
	case a.RecoverMs < 1:
		return nil, ruleErrorf("adaptive.recover_ms must be at least 1")
	case a.RecoverMs > budget.MaxDurationMs:
		return nil, ruleErrorf("adaptive.recover_ms must be at most %d", int64(budget.MaxDurationMs))
	}
	return &a, nil
}

// wireAdaptive renders a budget's back-off.
func wireAdaptive(a *store.Adaptive) *api.Adaptive {
	if a == nil {
		return nil
	}
	return &api.Adaptive{Decrease: a.Decrease, RecoverMs: a.RecoverMs, Floor: a.Floor}
}

// refusal checks a throttle's retry_after; path names it in errors.
func refusal(t api.Throttle, path string) (core.Refusal, error) {
	var r core.Refusal
	if ms := t.RetryAfterMs; ms != nil {
		switch {
		case *ms < 0:
			return r, badRequest("%sretry_after_ms must be at least 0", path)
		case *ms > maxRetryAfterMs:
			return r, unprocessable("%sretry_after_ms must be at most %d (a day): pause the budget for longer", path, int64(maxRetryAfterMs))
		}
		r.RetryAfterMs = *ms
	}
	return r, nil
}

// failThrottle checks a failure's throttle member.
func failThrottle(t *api.Throttle) (*core.FailThrottle, error) {
	if t == nil {
		return nil, nil
	}
	if t.Budget == nil || *t.Budget == "" {
		return nil, badRequest("throttle.budget is required: the budget whose upstream refused")
	}
	r, err := refusal(*t, "throttle.")
	if err != nil {
		return nil, err
	}
	return &core.FailThrottle{Budget: *t.Budget, Refusal: r, Count: t.Count != nil && *t.Count}, nil
}

// throttle answers POST /budgets/{key}/throttle: a refusal without a job,
// with an optional body {"retry_after_ms": N}. It answers the budget with
// its live figures.
func (s *Server) throttle(w http.ResponseWriter, r *http.Request) {
	var t api.Throttle
	if err := s.decodeOptional(w, r, &t); err != nil {
		s.fail(w, r, err)
		return
	}
	key := r.PathValue("key")
	if t.Budget != nil && *t.Budget != key {
		s.fail(w, r, unprocessable("budget is %q but the path names %q: leave it out, or name the same budget", *t.Budget, key))
		return
	}
	ref, err := refusal(t, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.core.Throttle(r.Context(), key, ref)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireBudgetView(v))
}
