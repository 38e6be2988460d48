package server

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

func wireBudgetView(v core.BudgetView) api.Budget {
	out := wireBudget(v.Budget)
	out.Weight = v.Weight
	if st := v.State; st != nil {
		out.State = &api.BudgetState{
			Available: st.Available, Capacity: st.Capacity, InFlight: st.InFlight, Held: st.Held,
			Parked: st.Parked, OldestParkedMs: st.OldestParkedMs, NextTokenAt: st.NextTokenAt, Dispatched: st.Dispatched,
			Expired: st.Expired,
		}
		if v.Budget.PerKey != nil {
			n := st.SubBudgets
			out.State.SubBudgets = &n
		}
		wireSettleState(out.State, st)
		wireBackoffState(out.State, st)
	}
	return out
}

// wireBackoffState renders the back-off figures of a budget that backs
// off or was throttled.
func wireBackoffState(out *api.BudgetState, st *core.BudgetState) {
	if !st.Adaptive {
		return
	}
	eff, n := st.EffectiveAllocation, st.Throttles
	out.EffectiveAllocation, out.Throttles = &eff, &n
	if st.ThrottledUntil > 0 {
		until := st.ThrottledUntil
		out.ThrottledUntil = &until
	}
}

// wireSettleState renders the settling and calendar figures, each left
// out where it does not apply.
func wireSettleState(out *api.BudgetState, st *core.BudgetState) {
	if !st.Spends {
		return
	}
	if st.Settles > 0 {
		out.Settled = &api.Settled{Count: st.Settles, Credited: st.Credited, Debited: st.Debited}
	}
	out.CostRatio = st.CostRatio
	if st.Debt > 0 {
		debt, at := st.Debt, st.RepaidAt
		out.Debt, out.RepaidAt = &debt, &at
	}
	if st.Calendar {
		used, at := st.Used, st.NextResetAt
		out.Used, out.NextResetAt = &used, &at
	}
}

// listBudgets answers GET /budgets: families and plain budgets, or with
// ?parent= a family's live sub-budgets.
func (s *Server) listBudgets(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseBudgetListQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var views []core.BudgetView
	if q.Parent != "" {
		views, err = s.core.SubBudgets(r.Context(), q.Parent, q.State)
	} else {
		views, err = s.core.Budgets(r.Context(), q.State)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.BudgetList{Budgets: make([]api.Budget, 0, len(views))}
	for _, v := range views {
		out.Budgets = append(out.Budgets, wireBudgetView(v))
	}
	s.respond(w, r, http.StatusOK, out)
}

func (s *Server) getBudget(w http.ResponseWriter, r *http.Request) {
	state, err := api.ParseStateQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v, err := s.core.Budget(r.Context(), r.PathValue("key"), state)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireBudgetView(v))
}

func (s *Server) createBudget(w http.ResponseWriter, r *http.Request) {
	s.writeBudget(w, r, core.CreateOnly, http.StatusCreated)
}

func (s *Server) putBudget(w http.ResponseWriter, r *http.Request) {
	s.writeBudget(w, r, core.CreateOrReplace, http.StatusOK)
}

func (s *Server) writeBudget(w http.ResponseWriter, r *http.Request, mode core.PutMode, status int) {
	var in api.BudgetInput
	unknown, err := s.decodeBudgetInput(w, r, &in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	key := r.PathValue("key")
	if err := api.ValidateBudgetKey(key); err != nil {
		s.fail(w, r, unprocessable("%s", err))
		return
	}
	cfg, err := budgetConfig(in, decodePrefix(r))
	if err == nil {
		err = unknown // after the missing fields, which come first
	}
	if err != nil {
		s.fail(w, r, ruleStatus(err))
		return
	}
	b, err := s.core.PutBudget(r.Context(), key, cfg, mode)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, status, wireBudget(b))
}

// ruleStatus answers broken budget value rules with 422.
func ruleStatus(err error) error {
	if re, ok := err.(*ruleError); ok {
		return unprocessable("%s", re.msg)
	}
	return err
}

func (s *Server) patchBudget(w http.ResponseWriter, r *http.Request) {
	p, err := s.decodeBudgetPatch(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, err := s.core.PatchBudget(r.Context(), r.PathValue("key"), p.apply)
	if err != nil {
		s.fail(w, r, ruleStatus(err))
		return
	}
	s.respond(w, r, http.StatusOK, wireBudget(b))
}

// budgetPatch is a PATCH /budgets/{key} body (docs/API.md §Patching a budget),
// decoded by package api.
type budgetPatch struct {
	api.BudgetPatch
}

func (s *Server) decodeBudgetPatch(w http.ResponseWriter, r *http.Request) (*budgetPatch, error) {
	f, data, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	body, err := api.DecodeBudgetPatch(f, data)
	if err != nil {
		return nil, err
	}
	return &budgetPatch{body}, nil
}

// apply merges the patch into a budget's configuration and validates the
// result; a different strategy type replaces the strategy wholesale.
func (p *budgetPatch) apply(cfg *store.Budget) error {
	if err := mergeBudget(cfg, p.Allocation, p.Strategy); err != nil {
		return err
	}
	if err := p.applyPerKey(cfg); err != nil {
		return err
	}
	if err := p.applyKeys(cfg); err != nil { // weights.go
		return err
	}
	if err := p.applyAdaptive(cfg); err != nil {
		return err
	}
	return p.applyPause(cfg)
}

// applyAdaptive merges the adaptive member field by field (into the
// defaults on a budget without one); null removes the back-off.
func (p *budgetPatch) applyAdaptive(cfg *store.Budget) error {
	if p.Adaptive.IsNull() {
		cfg.Adaptive = nil
		return nil
	}
	in, ok := p.Adaptive.Get()
	if !ok {
		return nil
	}
	a, err := adaptiveConfig(cfg.Adaptive, &in)
	if err != nil {
		return err
	}
	cfg.Adaptive = a
	return nil
}

// applyPerKey merges the per_key member into the family's template, as
// the budget's own members are merged; on a plain budget it makes a
// family, and must then be complete. null makes the budget plain.
func (p *budgetPatch) applyPerKey(cfg *store.Budget) error {
	if p.PerKey.IsNull() {
		cfg.PerKey = nil
		return nil
	}
	tp, ok := p.PerKey.Get()
	if !ok {
		return nil
	}
	var t store.Budget
	if cfg.PerKey == nil {
		switch {
		case tp.Allocation == nil:
			return ruleErrorf("per_key.allocation is required to make '%s' a family", cfg.Key)
		case tp.Strategy == nil || tp.Strategy.Type == nil:
			return ruleErrorf("per_key.strategy.type is required to make '%s' a family", cfg.Key)
		}
	} else {
		k := cfg.PerKey
		t = store.Budget{Allocation: k.Allocation, Strategy: k.Strategy, DurationMs: k.DurationMs, Burst: k.Burst}
	}
	if tp.Strategy != nil && tp.Strategy.Type != nil && *tp.Strategy.Type == store.Calendar {
		return ruleErrorf("per_key.strategy.type calendar is not supported: a family's sub-budgets are time_based or while_in_flight")
	}
	if err := mergeBudget(&t, tp.Allocation, tp.Strategy); err != nil {
		return inTemplate(err)
	}
	cfg.PerKey = template(t)
	return nil
}

// applyPause merges the pause members: paused true pauses; false or null
// resumes, so it also removes paused_until, which the patch may then not
// set; paused_until sets or (null) removes the pause's end.
func (p *budgetPatch) applyPause(cfg *store.Budget) error {
	until, hasUntil := p.PausedUntil.Get()
	paused, hasPaused := p.Paused.Get()
	switch {
	case hasPaused && paused:
		cfg.Paused = true
	case hasPaused || p.Paused.IsNull():
		if hasUntil {
			return ruleErrorf("paused_until cannot come with paused false or null: they resume the budget")
		}
		cfg.Paused, cfg.PausedUntil = false, 0
	}
	if p.PausedUntil.IsNull() {
		cfg.PausedUntil = 0
	}
	if hasUntil {
		if err := checkPausedUntil(until); err != nil {
			return err
		}
		cfg.PausedUntil = int64(until)
	}
	return nil
}

// mergeBudget merges allocation and strategy members into a budget's
// configuration (or a template's) and validates the result.
func mergeBudget(cfg *store.Budget, alloc *int64, strategy *api.StrategyPatch) error {
	if alloc != nil {
		cfg.Allocation = *alloc
	}
	hasDuration := cfg.Strategy == store.TimeBased
	hasBurst := cfg.Burst > 0
	st := api.StrategyPatch{}
	if strategy != nil {
		st = *strategy
	}
	if st.Type != nil && *st.Type != cfg.Strategy {
		cfg.Strategy, cfg.DurationMs, cfg.Burst, cfg.Reset, cfg.Timezone = *st.Type, 0, 0, "", ""
		hasDuration, hasBurst = false, false
		if cfg.Strategy == store.TimeBased && st.DurationMs == nil {
			return ruleErrorf("duration_ms is required for time_based budgets")
		}
		if cfg.Strategy == store.Calendar && st.Reset == nil {
			return ruleErrorf("reset is required for calendar budgets")
		}
	}
	if st.Reset != nil {
		cfg.Reset = *st.Reset
	}
	if st.Timezone != nil {
		cfg.Timezone = *st.Timezone
	}
	if st.DurationMs != nil {
		cfg.DurationMs, hasDuration = *st.DurationMs, true
	}
	if burst, ok := st.Burst.Get(); ok {
		cfg.Burst, hasBurst = burst, true
	} else if st.Burst.IsNull() {
		cfg.Burst, hasBurst = 0, false
	}
	return checkBudgetRules(*cfg, hasDuration, hasBurst)
}

// forecast answers GET /budgets/{key}/forecast, with the query's what-if
// checked as a PATCH of the same values would be: it changes nothing.
func (s *Server) forecast(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseWhatIf(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	key := r.PathValue("key")
	var whatIf *core.WhatIf
	if !q.IsZero() {
		v, err := s.core.Budget(r.Context(), key, false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := checkWhatIf(v.Budget, q); err != nil {
			s.fail(w, r, ruleStatus(err))
			return
		}
		whatIf = &core.WhatIf{Allocation: q.Allocation, DurationMs: q.DurationMs, Burst: q.Burst}
	}
	f, err := s.core.Forecast(r.Context(), key, whatIf)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.Forecast{Key: f.Key, Parked: f.Parked, DrainsAt: f.DrainsAt, Estimated: f.Estimated, Unknown: f.Unknown, Resets: f.Resets, BackingOff: f.BackingOff}
	if !q.IsZero() {
		out.WhatIf = &api.ForecastWhatIf{Allocation: q.Allocation, DurationMs: q.DurationMs, Burst: q.Burst}
	}
	s.respond(w, r, http.StatusOK, out)
}

// checkWhatIf checks a what-if against the value rules of the budget's
// configuration changed by it.
func checkWhatIf(cfg store.Budget, q api.WhatIf) error {
	hasBurst := cfg.Burst > 0
	if q.Allocation != nil {
		cfg.Allocation = *q.Allocation
	}
	if q.DurationMs != nil {
		cfg.DurationMs = *q.DurationMs
	}
	if q.Burst != nil {
		cfg.Burst, hasBurst = *q.Burst, true
	}
	return checkBudgetRules(cfg, cfg.Strategy == store.TimeBased || q.DurationMs != nil, hasBurst)
}

func (s *Server) deleteBudget(w http.ResponseWriter, r *http.Request) {
	if err := s.core.DeleteBudget(r.Context(), r.PathValue("key")); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}

// strategyMembers are the members a strategy object may have.
var strategyMembers = []string{"type", "duration_ms", "burst", "reset", "timezone"}

// decodeBudgetInput decodes a POST or PUT budget body; unknown refuses a
// member of a strategy that no strategy has: a misspelt "rest" would
// otherwise leave a calendar budget without its reset, or a "brust" a
// budget without its burst, and nobody would know.
func (s *Server) decodeBudgetInput(w http.ResponseWriter, r *http.Request, in *api.BudgetInput) (unknown, err error) {
	f, data, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := api.Unmarshal(f, data, in); err != nil {
		return nil, err
	}
	return cmp.Or(unknownStrategyMember(f, data), unknownKeyMember(f, data)), nil
}

func unknownStrategyMember(f api.Format, data []byte) error {
	var probe struct {
		Strategy map[string]any `json:"strategy"`
		PerKey   *struct {
			Strategy map[string]any `json:"strategy"`
		} `json:"per_key"`
	}
	if api.Unmarshal(f, data, &probe) != nil {
		return nil // the body decoded above; a shape this probe cannot read has no strategy object
	}
	if err := unknownMember(probe.Strategy, "strategy."); err != nil {
		return err
	}
	if probe.PerKey != nil {
		return unknownMember(probe.PerKey.Strategy, "per_key.strategy.")
	}
	return nil
}

func unknownMember(members map[string]any, path string) error {
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if !slices.Contains(strategyMembers, name) {
			return ruleErrorf("%s%s is not a field of a strategy (expected one of %s)", path, name, strings.Join(strategyMembers, ", "))
		}
	}
	return nil
}
