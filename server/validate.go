package server

import (
	"fmt"
	"math"
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// maxTimestampMs bounds timestamps so that they stay exact in nanoseconds
// (year 2262); anything later is certainly a mistake.
const maxTimestampMs = math.MaxInt64 / 1_000_000

// decodePrefix names the body format in "missing field" errors, the way a
// decoder would have reported them.
func decodePrefix(r *http.Request) string {
	if f, ok := api.RequestFormat(r.Header.Get("Content-Type")); ok && f == api.MsgPack {
		return "invalid MessagePack: "
	}
	return "invalid JSON: "
}

func missing(prefix, field string) error {
	return badRequest("%smissing field `%s`", prefix, field)
}

// newJob validates one enqueue request (the checks that do not depend on
// server state) and materialises its defaults.
func newJob(req *api.EnqueueRequest, prefix string) (engine.NewJob, error) {
	switch {
	case req.Type == nil:
		return engine.NewJob{}, missing(prefix, "type")
	case req.Queue == nil:
		return engine.NewJob{}, missing(prefix, "queue")
	case req.Payload == nil:
		return engine.NewJob{}, missing(prefix, "payload")
	}
	if err := api.ValidateName("type", *req.Type); err != nil {
		return engine.NewJob{}, badRequest("%s", err)
	}
	if err := api.ValidateName("queue", *req.Queue); err != nil {
		return engine.NewJob{}, badRequest("%s", err)
	}
	if req.UniqueWhile != nil && req.UniqueKey == nil {
		return engine.NewJob{}, badRequest("unique_while requires unique_key")
	}
	if req.UniqueKey != nil && req.Batch != nil {
		return engine.NewJob{}, badRequest("unique_key and batch cannot be combined")
	}
	if req.Batch != nil {
		return engine.NewJob{}, forbidden("batched jobs is not available on this server yet")
	}
	j := engine.NewJob{
		Type: *req.Type, Queue: *req.Queue, Priority: api.DefaultPriority,
		Payload: req.Payload, RetryLimit: req.RetryLimit,
	}
	if req.UniqueKey != nil {
		if *req.UniqueKey == "" {
			// Zizq would take "" as a key; a key that names nothing is far
			// likelier a client's mistake, and dropping it would be worse.
			return engine.NewJob{}, badRequest("unique_key must not be empty")
		}
		w, err := uniqueWhile(req.UniqueWhile)
		if err != nil {
			return engine.NewJob{}, err
		}
		j.UniqueKey, j.UniqueWhile = *req.UniqueKey, w
	}
	if req.Priority != nil {
		j.Priority = *req.Priority
	}
	if req.ReadyAt != nil {
		if *req.ReadyAt > maxTimestampMs {
			return engine.NewJob{}, badRequest("ready_at must be at most %d", int64(maxTimestampMs))
		}
		at := int64(*req.ReadyAt)
		j.ReadyAt = &at
	}
	b, err := backoff(req.Backoff, prefix)
	if err != nil {
		return engine.NewJob{}, err
	}
	j.Backoff = b
	if req.Retention != nil {
		j.Retention = &store.Retention{CompletedMs: req.Retention.CompletedMs, DeadMs: req.Retention.DeadMs}
	}
	j.Budgets, err = bindingSpecs(req.Budgets, prefix)
	if err != nil {
		return engine.NewJob{}, err
	}
	return j, nil
}

// uniqueWhile reads a unique key's scope, queued when absent.
func uniqueWhile(in *string) (store.UniqueWhile, error) {
	if in == nil {
		return store.UniqueQueued, nil
	}
	w, ok := store.ParseUniqueWhile(*in)
	if !ok {
		return 0, badRequest(`invalid unique_while: %q (expected "queued", "active", or "exists")`, *in)
	}
	return w, nil
}

func backoff(in *api.BackoffRequest, prefix string) (*store.Backoff, error) {
	if in == nil {
		return nil, nil
	}
	b, absent := in.Complete()
	if absent != "" {
		return nil, missing(prefix, absent)
	}
	return checkBackoff(b)
}

// checkBackoff checks a complete backoff, as enqueued or patched.
func checkBackoff(b api.Backoff) (*store.Backoff, error) {
	if e := float64(b.Exponent); math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
		return nil, badRequest("backoff exponent must be a finite number, at least 0")
	}
	return &store.Backoff{Exponent: b.Exponent, BaseMs: b.BaseMs, JitterMs: b.JitterMs}, nil
}

// bindingSpecs checks a job's budget bindings without looking at server
// state, so the outcome never depends on which budgets exist (400s).
func bindingSpecs(in []api.BindingRequest, prefix string) ([]engine.BindingSpec, error) {
	var out []engine.BindingSpec
	seen := map[string]bool{}
	for _, b := range in {
		spec, err := bindingSpec(b, prefix)
		if err != nil {
			return nil, err
		}
		if seen[spec.Key] {
			return nil, badRequest("budget '%s' is bound more than once", spec.Key)
		}
		seen[spec.Key] = true
		out = append(out, spec)
	}
	return out, nil
}

func bindingSpec(b api.BindingRequest, prefix string) (engine.BindingSpec, error) {
	if b.Key == nil {
		return engine.BindingSpec{}, missing(prefix, "key")
	}
	if err := api.ValidateBudgetKey(*b.Key); err != nil {
		return engine.BindingSpec{}, badRequest("%s", err)
	}
	spec := engine.BindingSpec{Key: *b.Key, Cost: 1}
	if b.Cost != nil {
		if *b.Cost < 1 {
			return engine.BindingSpec{}, badRequest("cost must be at least 1")
		}
		spec.Cost = *b.Cost
	}
	if b.CreateWith != nil {
		cfg, err := budgetConfig(*b.CreateWith, prefix)
		if err != nil {
			return engine.BindingSpec{}, badRequest("create_with: %s", err)
		}
		spec.CreateWith = &cfg
	}
	return spec, nil
}

// ruleError is a budget configuration that decodes but breaks a value rule.
type ruleError struct{ msg string }

func (e *ruleError) Error() string { return e.msg }

func ruleErrorf(format string, args ...any) error { return &ruleError{fmt.Sprintf(format, args...)} }

// budgetConfig validates a budget body (POST, PUT, create_with). Missing
// fields are decode errors (400); broken value rules are ruleErrors, which
// the budget endpoints answer with 422.
func budgetConfig(in api.BudgetInput, prefix string) (store.Budget, error) {
	if in.Allocation == nil {
		return store.Budget{}, missing(prefix, "allocation")
	}
	if in.Strategy == nil {
		return store.Budget{}, missing(prefix, "strategy")
	}
	if in.Strategy.Type == nil {
		return store.Budget{}, missing(prefix, "type")
	}
	cfg := store.Budget{Allocation: *in.Allocation, Strategy: *in.Strategy.Type}
	switch cfg.Strategy {
	case store.WhileInFlight:
	case store.TimeBased:
		if in.Strategy.DurationMs == nil {
			return store.Budget{}, missing(prefix, "duration_ms")
		}
	default:
		return store.Budget{}, badRequest("%sunknown variant `%s`, expected `while_in_flight` or `time_based`", prefix, cfg.Strategy)
	}
	if in.Strategy.DurationMs != nil {
		cfg.DurationMs = *in.Strategy.DurationMs
	}
	if in.Strategy.Burst != nil {
		cfg.Burst = *in.Strategy.Burst
	}
	return cfg, checkBudgetRules(cfg, in.Strategy.DurationMs != nil, in.Strategy.Burst != nil)
}

// checkBudgetRules checks the value rules of a complete configuration.
func checkBudgetRules(cfg store.Budget, hasDuration, hasBurst bool) error {
	switch {
	case cfg.Allocation < 1:
		return ruleErrorf("allocation must be at least 1")
	case cfg.Allocation > budget.MaxAllocation:
		return ruleErrorf("allocation must be at most %d", int64(budget.MaxAllocation))
	}
	if cfg.Strategy == store.WhileInFlight {
		if hasDuration {
			return ruleErrorf("duration_ms is only valid for time_based budgets")
		}
		if hasBurst {
			return ruleErrorf("burst is only valid for time_based budgets")
		}
		return nil
	}
	switch {
	case cfg.DurationMs < 1:
		return ruleErrorf("duration_ms must be at least 1")
	case cfg.DurationMs > budget.MaxDurationMs:
		return ruleErrorf("duration_ms must be at most %d", int64(budget.MaxDurationMs))
	case hasBurst && cfg.Burst < 1:
		return ruleErrorf("burst must be at least 1")
	case cfg.Burst > budget.MaxAllocation:
		return ruleErrorf("burst must be at most %d", int64(budget.MaxAllocation))
	}
	return nil
}
