package engine

import (
	"math"
	"sort"
	"time"

	"github.com/zizq/zizq/store"
)

// A paused budget pays nothing (issue 16): its jobs park, a job that it
// refuses holds no headship anywhere (docs/ENGINE.md §The exceptions, the
// second), and its only deadline is the end of the pause, if the pause has
// one. When that comes the budget resumes by itself, and the configuration it
// keeps in the store says so.

// pauseEnd returns when a configuration's pause ends (ns): 0 when it is not
// paused, MaxInt64 when it is paused until resumed.
func pauseEnd(cfg store.Budget) int64 {
	switch {
	case cfg.PausedUntil > 0:
		return cfg.PausedUntil * int64(time.Millisecond)
	case cfg.Paused:
		return math.MaxInt64
	}
	return 0
}

// paused reports whether the budget is paused now, or pays nothing for a
// refusal's retry_after (adaptive.go).
func (e *Engine) paused(a *account) bool { return a.pauseEnd > e.vnow || a.throttleEnd > e.vnow }

// pausedUntil is when a paused budget pays again (MaxInt64: when resumed).
func (e *Engine) pausedUntil(a *account) int64 {
	end := int64(0)
	if a.pauseEnd > e.vnow {
		end = a.pauseEnd
	}
	if a.throttleEnd > e.vnow {
		end = max(end, a.throttleEnd)
	}
	return end
}

// groupPaused reports whether a budget of the group is paused: its jobs
// hold no headship.
func (e *Engine) groupPaused(g *group) bool {
	for _, b := range g.binds() {
		if e.paused(b.a) {
			return true
		}
	}
	return false
}

// pauseChanged applies a budget's pause or resume: the heads of every
// budget sharing a group with it must be looked at again.
func (e *Engine) pauseChanged(a *account) {
	e.changed(a)
	for g := range a.servedGroups() {
		for _, b := range g.binds() {
			e.checkHead(b.a)
		}
	}
}

// endPause resumes a budget whose pause has ended, journalling the
// configuration without the pause (a sub-budget's: its family's).
func (e *Engine) endPause(a *account) {
	if a.pauseEnd == 0 || a.pauseEnd > e.vnow {
		return
	}
	a.pauseEnd = 0
	a.cfg.Paused, a.cfg.PausedUntil, a.cfg.UpdatedAt = false, 0, e.nowMs()
	if a.parent != nil {
		e.storeSubPause(a.parent, a.cfg.Key, store.Pause{})
	} else {
		e.journal.Append(store.PutBudget(a.cfg))
	}
	e.pauseChanged(a)
}

// A sub-budget's pause is its own (one tenant whose upstream said 429),
// while the rest of its configuration is its family's template. Sub-budgets
// are not stored, so their pauses are stored with their family
// (store.Budget.SubPauses), and a paused sub-budget stays live, and listed,
// until its pause ends or it is resumed.

// patchSub applies a change to the sub-budget key of family fam, refusing
// one that touches anything but its pause.
func (e *Engine) patchSub(fam *account, key string, change func(cfg *store.Budget) error) (store.Budget, Waiter, error) {
	if err := checkSubKey(fam, key); err != nil {
		return store.Budget{}, nil, err
	}
	a := e.accounts[key]
	cur := subConfig(fam, key, e.nowMs())
	if a != nil {
		cur = a.cfg
	}
	cfg := cur
	if err := change(&cfg); err != nil {
		return store.Budget{}, nil, err
	}
	if !samePace(cfg, cur) {
		return store.Budget{}, nil, errorf(Conflict, "budget '%s' is managed by family '%s': change the family's per_key instead; only its pause (paused, paused_until) is its own", key, fam.cfg.Key)
	}
	cfg.Key, cfg.CreatedAt, cfg.UpdatedAt = key, cur.CreatedAt, e.nowMs()
	if err := e.checkPauseEnd(cfg); err != nil {
		return store.Budget{}, nil, err
	}
	w := e.storeSubPause(fam, key, store.Pause{Paused: cfg.Paused, PausedUntil: cfg.PausedUntil})
	switch {
	case a == nil && pauseEnd(cfg) == 0:
		return cfg, w, nil // an idle sub-budget, resumed: as it was
	case a == nil:
		a = e.newSub(fam, key)
	}
	a.cfg = cfg
	if end := pauseEnd(cfg); end != a.pauseEnd {
		a.pauseEnd = end
		e.pauseChanged(a)
	}
	if a.bound == 0 && !e.releaseSub(a) {
		e.deadlineDirty(a)
	}
	return cfg, w, nil
}

// samePace reports whether two configurations differ at most in their
// pause and timestamps.
func samePace(a, b store.Budget) bool {
	return a.Allocation == b.Allocation && a.Strategy == b.Strategy && a.DurationMs == b.DurationMs &&
		a.Burst == b.Burst && a.PerKey == nil && b.PerKey == nil
}

// storeSubPause records the pause of the sub-budget key in its family's
// configuration (none: resumed) and journals the family. The map is
// copied, never changed: journalled configurations share it.
func (e *Engine) storeSubPause(fam *account, key string, p store.Pause) Waiter {
	pauses := make(map[string]store.Pause, len(fam.cfg.SubPauses)+1)
	for k, v := range fam.cfg.SubPauses {
		pauses[k] = v
	}
	if p == (store.Pause{}) {
		delete(pauses, key)
	} else {
		pauses[key] = p
	}
	if len(pauses) == 0 {
		pauses = nil
	}
	fam.cfg.SubPauses = pauses
	return e.journal.Append(store.PutBudget(fam.cfg))
}

// restoreSubPauses makes a live sub-budget for each stored pause of family
// a that has not ended, dropping those that have.
func (e *Engine) restoreSubPauses(a *account) {
	if a.fam == nil || len(a.cfg.SubPauses) == 0 {
		a.cfg.SubPauses = nil
		return
	}
	pauses := make(map[string]store.Pause, len(a.cfg.SubPauses))
	for k, p := range a.cfg.SubPauses {
		if cfg := e.pastPauseCleared(store.Budget{Paused: p.Paused, PausedUntil: p.PausedUntil}); cfg.Paused || cfg.PausedUntil > 0 {
			pauses[k] = p
		}
	}
	if len(pauses) == 0 {
		pauses = nil
	}
	a.cfg.SubPauses = pauses
	keys := make([]string, 0, len(pauses))
	for k := range pauses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e.deadlineDirty(e.newSub(a, k))
	}
}
