package engine

import (
	"sort"
	"strings"

	"github.com/zizq/zizq/store"
)

// Families (issue 16, our extension). A budget with a per_key template is a
// family: a job bound to "<family>/<sub>", when no plain budget has that
// key, is bound to the sub-budget "<family>/<sub>" and, implied, to the
// family at the same cost. Sub-budgets are made from the template when a
// job first needs one and dropped once nothing is bound to them and their
// pool is full (a fresh one is the same), so they are never stored and do
// not count against the budget limit.
//
// Fair share is part of the one order (order.go): a family job's tag is a
// virtual start time, as in start-time fair queueing. The family keeps a
// virtual time, the greatest tag it has dispatched (the present, when none
// of its jobs waits); each sub-budget keeps the tag its next job starts
// from. A job's tag is the later of the two, and moves its sub-budget's on
// by one quantum per unit of cost, divided by the sub-key's weight
// (weights.go): the family's time per token, so that
// tags run at the pace the family dispatches. A sub-key that arrives late
// starts at the family's virtual time, ahead of the backlog of the others,
// and each sub-key then gets one turn per quantum: within a few of the
// family's tokens, whatever the others have queued.

// family is the live side of a family budget.
type family struct {
	subs  map[string]*account // live sub-budgets by key
	vtime int64               // ms: the greatest tag dispatched
}

// bind is one resolved budget binding of a job. implied marks the family
// a sub-budget binding charges too: not part of the job's bindings as sent.
type bind struct {
	a       *account
	cost    int64
	implied bool
}

// familyOf returns the family that would manage key, or nil: the family
// whose key is the longest proper prefix of key ending before a '/'.
func (e *Engine) familyOf(key string) *account {
	for i := strings.LastIndexByte(key, '/'); i > 0; i = strings.LastIndexByte(key[:i], '/') {
		if a := e.accounts[key[:i]]; a != nil && a.fam != nil && a.parent == nil {
			return a
		}
	}
	return nil
}

// checkSubKey refuses a key of family fam whose sub-key (what follows
// "<family>/") is empty or holds a '/': a script whose $TENANT came out
// empty would otherwise put every job in one shared sub-budget, and
// "a/b" would be a tenant no one can tell from a nested family's.
func checkSubKey(fam *account, key string) *Error {
	sub := key[len(fam.cfg.Key)+1:]
	switch {
	case sub == "":
		return errorf(Unprocessable, "budget key '%s' has an empty sub-key: a key of family '%s' is '%s/<sub-key>'", key, fam.cfg.Key, fam.cfg.Key)
	case strings.IndexByte(sub, '/') >= 0:
		return errorf(Unprocessable, "budget key '%s': the sub-key '%s' of family '%s' must not contain '/'", key, sub, fam.cfg.Key)
	}
	return nil
}

// subFamily returns the family that would make key a sub-budget, or nil;
// Unprocessable when key's sub-key is not one (checkSubKey).
func (e *Engine) subFamily(key string) (*account, *Error) {
	fam := e.familyOf(key)
	if fam == nil {
		return nil, nil
	}
	return fam, checkSubKey(fam, key)
}

// managedBy returns the family that manages key: key is not a plain
// budget's and a family would make it a sub-budget.
func (e *Engine) managedBy(key string) *account {
	if a := e.accounts[key]; a != nil {
		if a.parent != nil {
			return a.parent
		}
		return nil
	}
	return e.familyOf(key)
}

// resolve returns the account a binding of key charges and its family (nil
// for a plain budget), making the sub-budget when it is not live; nil when
// no budget would pay key.
func (e *Engine) resolve(key string) (a, fam *account) {
	if a := e.accounts[key]; a != nil {
		return a, a.parent
	}
	fam = e.familyOf(key)
	if fam == nil {
		return nil, nil
	}
	return e.newSub(fam, key), fam
}

// subConfig is the configuration of the sub-budget key of family fam: the
// family's template with the key's allocation (weights.go), and the
// sub-budget's own pause.
func subConfig(fam *account, key string, ms int64) store.Budget {
	t := fam.cfg.PerKey
	p := fam.cfg.SubPauses[key]
	return store.Budget{
		Key: key, Allocation: keyAllocation(fam.cfg, t, key), Strategy: t.Strategy, DurationMs: t.DurationMs, Burst: t.Burst,
		CreatedAt: ms, UpdatedAt: ms, Paused: p.Paused, PausedUntil: p.PausedUntil,
	}
}

func (e *Engine) newSub(fam *account, key string) *account {
	a := e.addAccount(subConfig(fam, key, e.nowMs()))
	a.parent = fam
	a.weight = weightOf(fam.cfg, key)
	fam.fam.subs[key] = a
	e.subBudgets++
	return a
}

// releaseSub drops an idle sub-budget: nothing bound, pool full, not
// paused (a paused one stays listed, and is released when its pause ends).
// A time_based one that is not full yet is looked at again when it will be
// (refreshDeadlines).
func (e *Engine) releaseSub(a *account) bool {
	if a.parent == nil || a.bound > 0 || a.pauseEnd != 0 || e.backingOff(a) || !a.pool.Full(e.vnow) || a.gone {
		return false
	}
	if a.dl != nil {
		e.refills.remove(a.dl)
		a.dl = nil
	}
	e.dropAccount(a)
	delete(a.parent.fam.subs, a.cfg.Key)
	e.subBudgets--
	return true
}

// idleAt returns when an idle time_based sub-budget's pool will be full.
func (e *Engine) idleAt(a *account) (int64, bool) {
	if a.parent == nil || a.bound > 0 {
		return 0, false
	}
	return a.pool.AffordableAt(a.pool.Capacity(), e.vnow)
}

// checkFamilyBindings refuses a binding whose sub-key is not one
// (checkSubKey), and a job bound to a family and one of its sub-budgets, or
// to two sub-budgets of one family: the sub-budget charges its family
// already, and twice would be a double charge nobody means.
func (e *Engine) checkFamilyBindings(specs []BindingSpec) *Error {
	for _, b := range specs {
		if e.accounts[b.Key] == nil {
			if _, err := e.subFamily(b.Key); err != nil {
				return err
			}
		}
	}
	if len(specs) < 2 {
		return nil
	}
	seen := map[*account]string{}
	for _, b := range specs {
		fam := e.managedBy(b.Key)
		if fam == nil {
			if a := e.accounts[b.Key]; a != nil && a.fam != nil {
				fam = a
			} else {
				continue
			}
		}
		if other, dup := seen[fam]; dup {
			if other == fam.cfg.Key || b.Key == fam.cfg.Key {
				return errorf(Invalid, "job binds budget family '%s' and its sub-budget '%s': a sub-budget charges its family already", fam.cfg.Key, max(other, b.Key))
			}
			return errorf(Invalid, "job binds two sub-budgets of family '%s' ('%s' and '%s')", fam.cfg.Key, other, b.Key)
		}
		seen[fam] = b.Key
	}
	return nil
}

// quantum is how far a job of cost moves its sub-budget's tag on: the
// family's time for cost tokens (ms, at least 1).
func quantum(fam *account, cost int64) int64 {
	q := cost
	if fam.cfg.Strategy == store.TimeBased && fam.cfg.Allocation > 0 {
		q = (cost*fam.cfg.DurationMs + fam.cfg.Allocation - 1) / fam.cfg.Allocation
	}
	return max(q, 1)
}

// fairTag gives a new job of sub-budget sub its tag (ms).
func (e *Engine) fairTag(sub, fam *account, cost int64) int64 {
	if fam.waitN == 0 {
		// An idle family starts again from the present, and stays there:
		// a second sub-key enqueuing before any dispatch must not start
		// from a virtual time long past (tags far ahead of every line).
		fam.fam.vtime = max(fam.fam.vtime, e.nowMs())
	}
	sub.startFrom(fam.fam.vtime)
	tag := sub.finish
	sub.advance(quantum(fam, cost)) // by quantum ÷ weight (weights.go)
	return tag
}

// dispatchedTag moves the virtual time of the families a job charges on to
// its tag.
func (e *Engine) dispatchedTag(tag int64, binds []bind) {
	for _, b := range binds {
		if b.a.fam != nil { // bound through a sub-key or to the family itself
			b.a.fam.vtime = max(b.a.fam.vtime, tag)
		}
	}
}

// restoredTag accounts a restored family job's tag: the family's virtual
// time starts at the earliest tag of its waiting jobs, each sub-budget's
// next start after its latest.
func restoredTag(binds []bind, tag int64, restored map[*account]bool) {
	for i, b := range binds {
		if !b.implied {
			continue
		}
		fam := b.a
		if !restored[fam] || tag < fam.fam.vtime {
			fam.fam.vtime = tag
			restored[fam] = true
		}
		if i > 0 {
			sub := binds[i-1].a
			sub.restoreFinish(tag, quantum(fam, binds[i-1].cost))
		}
	}
}

// SubBudgets returns the live sub-budgets of the family parent, by key,
// with live figures when state is true; NotFound when there is no budget
// parent, Unprocessable when it is not a family.
func (e *Engine) SubBudgets(parent string, state bool) ([]BudgetView, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
	a := e.accounts[parent]
	switch {
	case a == nil && e.familyOf(parent) == nil:
		return nil, errorf(NotFound, "budget family '%s' not found", parent)
	case a == nil || a.fam == nil:
		return nil, errorf(Unprocessable, "budget '%s' is not a family: it has no per_key, so no sub-budgets", parent)
	}
	out := make([]BudgetView, 0, len(a.fam.subs))
	for _, s := range a.fam.subs {
		out = append(out, e.budgetView(s, state))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Budget.Key < out[j].Budget.Key })
	return out, nil
}

// SubBudgetFilter returns, for a filter of jobs by the budget keys keys,
// the families among them, whose jobs bound through a sub-budget a filter
// by the family's key must find too, and the budgets of their own under
// those families' names ("<family>/…": a plain budget made before the
// family, or a family of its own), whose jobs it must not.
func (e *Engine) SubBudgetFilter(keys []string) (families, own []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		if a := e.accounts[k]; a != nil && a.fam != nil && a.parent == nil {
			families = append(families, k)
		}
	}
	if len(families) == 0 {
		return nil, nil
	}
	for key, a := range e.accounts {
		if a.parent != nil {
			continue
		}
		for _, f := range families {
			if len(key) > len(f) && key[len(f)] == '/' && strings.HasPrefix(key, f) {
				own = append(own, key)
				break
			}
		}
	}
	sort.Strings(own)
	return families, own
}
