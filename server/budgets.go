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

// budgetPatch is a PATCH /budgets/{key} body (API.md §17.4.2), decoded by
// package api.
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
	if p.Allocation != nil {
		cfg.Allocation = *p.Allocation
	}
	hasDuration := cfg.Strategy == store.TimeBased
	hasBurst := cfg.Burst > 0
	st := api.StrategyPatch{}
	if p.Strategy != nil {
		st = *p.Strategy
	}
	if st.Type != nil && *st.Type != cfg.Strategy {
		cfg.Strategy, cfg.DurationMs, cfg.Burst = *st.Type, 0, 0
		hasDuration, hasBurst = false, false
		if cfg.Strategy == store.TimeBased && st.DurationMs == nil {
			return ruleErrorf("duration_ms is required for time_based budgets")
		}
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

func (s *Server) deleteBudget(w http.ResponseWriter, r *http.Request) {
	if err := s.core.DeleteBudget(r.Context(), r.PathValue("key")); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}
