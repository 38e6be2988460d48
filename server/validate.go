package server

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// maxTimestampMs bounds timestamps so that they stay exact in nanoseconds
// (year 2262); anything later is certainly a mistake.
const maxTimestampMs = api.MaxTimestampMs

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
func newJob(req *api.EnqueueRequest, prefix string) (core.NewJob, error) {
	switch {
	case req.Type == nil:
		return core.NewJob{}, missing(prefix, "type")
	case req.Queue == nil:
		return core.NewJob{}, missing(prefix, "queue")
	case req.Payload == nil:
		return core.NewJob{}, missing(prefix, "payload")
	}
	// A batch missing a field does not decode in Zizq: that comes first.
	batch, err := batchConfig(req.Batch, prefix)
	if err != nil {
		return core.NewJob{}, err
	}
	if err := api.ValidateName("type", *req.Type); err != nil {
		return core.NewJob{}, badRequest("%s", err)
	}
	if err := api.ValidateName("queue", *req.Queue); err != nil {
		return core.NewJob{}, badRequest("%s", err)
	}
	if req.UniqueWhile != nil && req.UniqueKey == nil {
		return core.NewJob{}, badRequest("unique_while requires unique_key")
	}
	if req.UniqueKey != nil && req.Batch != nil {
		return core.NewJob{}, badRequest("unique_key and batch cannot be combined")
	}
	j := core.NewJob{
		Type: *req.Type, Queue: *req.Queue, Priority: api.DefaultPriority,
		Payload: req.Payload, RetryLimit: req.RetryLimit,
	}
	if req.UniqueKey != nil {
		if *req.UniqueKey == "" {
			// Zizq would take "" as a key; a key that names nothing is far
			// likelier a client's mistake, and dropping it would be worse.
			return core.NewJob{}, badRequest("unique_key must not be empty")
		}
		w, err := uniqueWhile(req.UniqueWhile)
		if err != nil {
			return core.NewJob{}, err
		}
		j.UniqueKey, j.UniqueWhile = *req.UniqueKey, w
	}
	if req.Priority != nil {
		j.Priority = *req.Priority
	}
	if req.ReadyAt != nil {
		if *req.ReadyAt > maxTimestampMs {
			return core.NewJob{}, badRequest("ready_at must be at most %d", int64(maxTimestampMs))
		}
		at := int64(*req.ReadyAt)
		j.ReadyAt = &at
	}
	if err := startBy(req, &j); err != nil {
		return core.NewJob{}, err
	}
	b, err := backoff(req.Backoff, prefix)
	if err != nil {
		return core.NewJob{}, err
	}
	j.Backoff = b
	if req.Retention != nil {
		j.Retention = &store.Retention{CompletedMs: req.Retention.CompletedMs, DeadMs: req.Retention.DeadMs}
	}
	j.Budgets, err = bindingSpecs(req.Budgets, prefix)
	if err != nil {
		return core.NewJob{}, err
	}
	j.Batch = batch
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

// batchConfig checks that a batch has its three fields; the programs are
// the core's to compile and dry-run (422 when they fail).
func batchConfig(in *api.BatchRequest, prefix string) (*store.BatchConfig, error) {
	switch {
	case in == nil:
		return nil, nil
	case in.Key == nil:
		return nil, missing(prefix, "key")
	case in.When == nil:
		return nil, missing(prefix, "when")
	case in.Fold == nil:
		return nil, missing(prefix, "fold")
	}
	return &store.BatchConfig{Key: *in.Key, When: *in.When, Fold: *in.Fold}, nil
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
func bindingSpecs(in []api.BindingRequest, prefix string) ([]core.BindingSpec, error) {
	var out []core.BindingSpec
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

func bindingSpec(b api.BindingRequest, prefix string) (core.BindingSpec, error) {
	if b.Key == nil {
		return core.BindingSpec{}, missing(prefix, "key")
	}
	if err := api.ValidateBudgetKey(*b.Key); err != nil {
		return core.BindingSpec{}, badRequest("%s", err)
	}
	spec := core.BindingSpec{Key: *b.Key, Cost: 1}
	if b.Cost != nil {
		if *b.Cost < 1 {
			return core.BindingSpec{}, badRequest("cost must be at least 1")
		}
		spec.Cost = *b.Cost
	}
	if b.CreateWith != nil {
		cfg, err := createWith(*b.CreateWith, prefix)
		if err != nil {
			return core.BindingSpec{}, badRequest("create_with: %s", err)
		}
		spec.CreateWith = &cfg
	}
	return spec, nil
}

// createWith validates a binding's create_with: a plain budget body. A
// family or a pause is made with the budget endpoints, where the engine
// weighs them against the budget's jobs; create_with creates a budget
// along with a job and never changes one.
func createWith(in api.BudgetInput, prefix string) (store.Budget, error) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"per_key", in.PerKey != nil}, {"keys", in.Keys != nil}, {"paused", in.Paused != nil}, {"paused_until", in.PausedUntil != nil}} {
		if f.set {
			return store.Budget{}, fmt.Errorf("%s is not allowed here: set it with PUT or PATCH /budgets/{key}", f.name)
		}
	}
	return budgetConfig(in, prefix)
}

// ruleError is a budget configuration that decodes but breaks a value rule.
type ruleError struct{ msg string }

func (e *ruleError) Error() string { return e.msg }

func ruleErrorf(format string, args ...any) error { return &ruleError{fmt.Sprintf(format, args...)} }

// inTemplate names a broken rule of a family's template by its path
// ("per_key.allocation must be at least 1"); other errors pass as they are.
func inTemplate(err error) error {
	var re *ruleError
	if errors.As(err, &re) {
		return ruleErrorf("per_key.%s", re.msg)
	}
	return err
}

// budgetConfig validates a budget body (POST, PUT, create_with). Missing
// fields are decode errors (400), and come first; broken value rules are
// ruleErrors, which the budget endpoints answer with 422.
func budgetConfig(in api.BudgetInput, prefix string) (store.Budget, error) {
	cfg, baseErr := budgetBody(in.Allocation, in.Strategy, prefix, "")
	if baseErr != nil && !isRuleError(baseErr) {
		return store.Budget{}, baseErr
	}
	var tmplErr error
	if t := in.PerKey; t != nil {
		var tc store.Budget
		tc, tmplErr = budgetBody(t.Allocation, t.Strategy, prefix, "per_key.")
		if tmplErr != nil && !isRuleError(tmplErr) {
			return store.Budget{}, tmplErr
		}
		cfg.PerKey = template(tc)
	}
	if err := cmp.Or(baseErr, inTemplate(tmplErr)); err != nil {
		return store.Budget{}, err
	}
	keys, err := keysInput(in) // weights.go
	if err != nil {
		return store.Budget{}, err
	}
	cfg.Keys = keys
	if in.Paused != nil && !*in.Paused && in.PausedUntil != nil {
		return store.Budget{}, ruleErrorf("paused_until cannot come with paused false: paused_until pauses the budget")
	}
	if in.Adaptive != nil {
		a, err := adaptiveConfig(nil, in.Adaptive)
		if err != nil {
			return store.Budget{}, err
		}
		cfg.Adaptive = a
	}
	cfg.Paused = in.Paused != nil && *in.Paused
	if in.PausedUntil != nil {
		if err := checkPausedUntil(*in.PausedUntil); err != nil {
			return store.Budget{}, err
		}
		cfg.PausedUntil = int64(*in.PausedUntil)
	}
	return cfg, nil
}

// budgetBody validates the allocation and strategy of a budget body or of
// its template; path ("" or "per_key.") names the template's missing
// fields by their path, where the budget's own keep Zizq's words.
func budgetBody(alloc *int64, strategy *api.StrategyInput, prefix, path string) (store.Budget, error) {
	inStrategy := ""
	if path != "" {
		inStrategy = path + "strategy."
	}
	if alloc == nil {
		return store.Budget{}, missing(prefix, path+"allocation")
	}
	if strategy == nil {
		return store.Budget{}, missing(prefix, path+"strategy")
	}
	if strategy.Type == nil {
		return store.Budget{}, missing(prefix, inStrategy+"type")
	}
	cfg := store.Budget{Allocation: *alloc, Strategy: *strategy.Type}
	switch cfg.Strategy {
	case store.WhileInFlight:
	case store.TimeBased:
		if strategy.DurationMs == nil {
			return store.Budget{}, missing(prefix, inStrategy+"duration_ms")
		}
	case store.Calendar:
		if path != "" {
			return store.Budget{}, ruleErrorf("strategy.type calendar is not supported: a family's sub-budgets are time_based or while_in_flight")
		}
		if strategy.Reset == nil {
			return store.Budget{}, missing(prefix, "reset")
		}
	default:
		return store.Budget{}, badRequest("%sunknown variant `%s`, expected `while_in_flight`, `time_based` or `calendar`", prefix, cfg.Strategy)
	}
	if strategy.DurationMs != nil {
		cfg.DurationMs = *strategy.DurationMs
	}
	if strategy.Burst != nil {
		cfg.Burst = *strategy.Burst
	}
	if strategy.Reset != nil {
		cfg.Reset = *strategy.Reset
	}
	if strategy.Timezone != nil {
		cfg.Timezone = *strategy.Timezone
	}
	return cfg, checkBudgetRules(cfg, strategy.DurationMs != nil, strategy.Burst != nil)
}

func isRuleError(err error) bool {
	var re *ruleError
	return errors.As(err, &re)
}

// template is the family template of a budget body's configuration.
func template(b store.Budget) *store.BudgetTemplate {
	return &store.BudgetTemplate{Allocation: b.Allocation, Strategy: b.Strategy, DurationMs: b.DurationMs, Burst: b.Burst}
}

// checkPausedUntil checks the end of a pause: a timestamp, as ready_at is.
func checkPausedUntil(ms uint64) error {
	switch {
	case ms < 1:
		return ruleErrorf("paused_until must be at least 1")
	case ms > maxTimestampMs:
		return ruleErrorf("paused_until must be at most %d", int64(maxTimestampMs))
	}
	return nil
}

// checkBudgetRules checks the value rules of a complete configuration.
func checkBudgetRules(cfg store.Budget, hasDuration, hasBurst bool) error {
	switch {
	case cfg.Allocation < 1:
		return ruleErrorf("allocation must be at least 1")
	case cfg.Allocation > budget.MaxAllocation:
		return ruleErrorf("allocation must be at most %d", int64(budget.MaxAllocation))
	}
	if cfg.Strategy != store.Calendar && (cfg.Reset != "" || cfg.Timezone != "") {
		return ruleErrorf("reset and timezone are only valid for calendar budgets")
	}
	if cfg.Strategy != store.TimeBased {
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
