package server

import (
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

func wireBudgetView(v engine.BudgetView) api.Budget {
	out := wireBudget(v.Budget)
	if st := v.State; st != nil {
		out.State = &api.BudgetState{
			Available: st.Available, Capacity: st.Capacity, InFlight: st.InFlight, Held: st.Held,
			Parked: st.Parked, OldestParkedMs: st.OldestParkedMs, NextTokenAt: st.NextTokenAt, Dispatched: st.Dispatched,
		}
	}
	return out
}

func (s *Server) listBudgets(w http.ResponseWriter, r *http.Request) {
	state, err := api.ParseStateQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views, err := s.core.Budgets(state)
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
	v, err := s.core.Budget(r.PathValue("key"), state)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireBudgetView(v))
}

func (s *Server) createBudget(w http.ResponseWriter, r *http.Request) {
	s.writeBudget(w, r, engine.CreateOnly, http.StatusCreated)
}

func (s *Server) putBudget(w http.ResponseWriter, r *http.Request) {
	s.writeBudget(w, r, engine.CreateOrReplace, http.StatusOK)
}

func (s *Server) writeBudget(w http.ResponseWriter, r *http.Request, mode engine.PutMode, status int) {
	var in api.BudgetInput
	if err := s.decode(w, r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	key := r.PathValue("key")
	if err := api.ValidateBudgetKey(key); err != nil {
		s.fail(w, r, unprocessable("%s", err))
		return
	}
	cfg, err := budgetConfig(in, decodePrefix(r))
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

// budgetPatch is a JSON merge patch of a budget (API.md §17.4.2).
type budgetPatch struct {
	allocation *int64
	typ        *string
	duration   *int64
	burst      field
	burstVal   int64
}

func (s *Server) decodeBudgetPatch(w http.ResponseWriter, r *http.Request) (*budgetPatch, error) {
	// key is ignored, as in POST and PUT bodies: the path names the budget.
	body, err := s.decodePatch(w, r, "allocation", "strategy", "key")
	if err != nil {
		return nil, err
	}
	p := &budgetPatch{}
	if f := body.field("allocation"); f.set {
		var v int64
		if err := f.notNull(); err != nil {
			return nil, err
		}
		if err := f.decodeAs(&v, wantInteger); err != nil {
			return nil, err
		}
		p.allocation = &v
	}
	strategy := body.field("strategy")
	if !strategy.set {
		return p, nil
	}
	if err := strategy.notNull(); err != nil {
		return nil, err
	}
	inner, err := strategy.object("type", "duration_ms", "burst")
	if err != nil {
		return nil, err
	}
	return p, p.decodeStrategy(inner)
}

func (p *budgetPatch) decodeStrategy(inner patchObject) error {
	for _, name := range []string{"type", "duration_ms"} {
		if err := inner.field(name).notNull(); err != nil {
			return err
		}
	}
	if f := inner.field("type"); f.set {
		var t string
		if err := f.decodeAs(&t, wantString); err != nil {
			return err
		}
		if t != store.WhileInFlight && t != store.TimeBased {
			return badRequest("%sunknown variant `%s`, expected `while_in_flight` or `time_based`", f.prefix, t)
		}
		p.typ = &t
	}
	if f := inner.field("duration_ms"); f.set {
		var d int64
		if err := f.decodeAs(&d, wantInteger); err != nil {
			return err
		}
		p.duration = &d
	}
	p.burst = inner.field("burst")
	if p.burst.set && !p.burst.null {
		if err := p.burst.decodeAs(&p.burstVal, wantInteger); err != nil {
			return err
		}
	}
	return nil
}

// apply merges the patch into a budget's configuration and validates the
// result; a different strategy type replaces the strategy wholesale.
func (p *budgetPatch) apply(cfg *store.Budget) error {
	if p.allocation != nil {
		cfg.Allocation = *p.allocation
	}
	hasDuration := cfg.Strategy == store.TimeBased
	hasBurst := cfg.Burst > 0
	if p.typ != nil && *p.typ != cfg.Strategy {
		cfg.Strategy, cfg.DurationMs, cfg.Burst = *p.typ, 0, 0
		hasDuration, hasBurst = false, false
		if cfg.Strategy == store.TimeBased && p.duration == nil {
			return ruleErrorf("duration_ms is required for time_based budgets")
		}
	}
	if p.duration != nil {
		cfg.DurationMs, hasDuration = *p.duration, true
	}
	switch {
	case p.burst.null:
		cfg.Burst, hasBurst = 0, false
	case p.burst.set:
		cfg.Burst, hasBurst = p.burstVal, true
	}
	return checkBudgetRules(*cfg, hasDuration, hasBurst)
}

func (s *Server) deleteBudget(w http.ResponseWriter, r *http.Request) {
	if err := s.core.DeleteBudget(r.Context(), r.PathValue("key")); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}
