package engine

import (
	"github.com/zizq/zizq/store"
)

// BindChange computes a job's new bindings from its current ones. It
// reports changed=false to leave the job alone (not counted as changed).
type BindChange func(cur []BindingSpec) (next []BindingSpec, changed bool, err error)

// RebindResult is the outcome of Rebind.
type RebindResult struct {
	Jobs    []store.Job // the changed jobs, as they are now
	Changed int64
	Blocked []string // in-flight jobs left unchanged
}

// Rebind changes the budget bindings of scheduled and ready jobs, all or
// nothing: every change is validated (budget exists or create_with, cost
// within capacity) before any is applied. In-flight jobs keep their
// bindings and are reported as blocked. With strict, a missing job is a
// NotFound error and an in-flight one Unprocessable; otherwise missing jobs
// are skipped.
func (e *Engine) Rebind(ids []string, change BindChange, strict bool) (RebindResult, Waiter, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enterOp()
	defer e.finishOp()
	e.obs.patches++ // a job's bindings show in its window
	ms := e.nowMs()
	type plan struct {
		j    ref
		id   string
		next []BindingSpec
	}
	var (
		plans   []plan
		res     RebindResult
		created []store.Budget
		pending = map[string]int{}
	)
	for _, id := range ids {
		j, ok := e.lookup(id)
		if !ok {
			if strict {
				return res, nil, errorf(NotFound, "job not found")
			}
			continue
		}
		if e.rec(j.idx).state == stInFlight {
			if strict {
				return res, nil, errorf(Unprocessable, "cannot change the budgets of job %s in in_flight status", id)
			}
			res.Blocked = append(res.Blocked, id)
			continue
		}
		next, changed, err := change(e.bindingSpecs(j.idx))
		if err != nil {
			return RebindResult{}, nil, err
		}
		if !changed {
			continue
		}
		if err := e.checkFamilyBindings(next); err != nil {
			return RebindResult{}, nil, err
		}
		for _, b := range next {
			cfg, err := e.authoritative(b, ms, &created, pending)
			if err == nil {
				err = checkCost(b.Cost, cfg)
			}
			if err != nil {
				return RebindResult{}, nil, err
			}
		}
		plans = append(plans, plan{j, id, next})
	}
	var ops []store.Op
	for _, cfg := range created {
		e.addAccount(cfg)
		ops = append(ops, store.PutBudget(cfg))
	}
	for _, p := range plans {
		e.rebind(p.j, p.next)
		v := e.view(p.id, p.j.idx)
		ops = append(ops, store.SetBudgets(p.id, v.Budgets))
		res.Jobs = append(res.Jobs, v)
	}
	res.Changed = int64(len(plans))
	var w Waiter = done{}
	if len(ops) > 0 {
		w = e.journal.Append(ops...)
	}
	return res, w, nil
}

func (e *Engine) bindingSpecs(idx int32) []BindingSpec {
	binds := e.binds(e.rec(idx))
	out := make([]BindingSpec, 0, len(binds))
	for _, b := range binds {
		if !b.implied {
			out = append(out, BindingSpec{Key: b.a.cfg.Key, Cost: b.cost})
		}
	}
	return out
}

// rebind swaps a waiting job's bindings and places it again: freed from a
// line it may dispatch at once; bound to an exhausted budget it parks.
//
// The new bindings are counted before the old ones are let go, so a
// sub-budget the job keeps is never released (and made again) on the way:
// it keeps its fair-share state.
func (e *Engine) rebind(j ref, next []BindingSpec) {
	e.detach(j)
	specs := make([]store.Binding, len(next))
	for i, b := range next {
		specs[i] = store.Binding{Key: b.Key, Cost: b.Cost}
	}
	binds, _ := e.resolveBinds(nil, specs) // checked: every key resolves
	for _, b := range binds {
		b.a.bind(b.cost, +1)
	}
	e.unbind(j.idx)
	r := e.rec(j.idx)
	typ := e.typeOf(r)
	e.releaseBinds(r.binds)
	r.binds = e.internBinds(typ, binds)
	e.schedule(j)
}
