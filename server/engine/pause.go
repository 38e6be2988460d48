package engine

import (
	"math"
	"time"

	"github.com/zizq/zizq/store"
)

// A paused budget pays nothing (issue 16): its jobs park, a job that it
// refuses holds no headship anywhere (ENGINE.md's second exception), and
// its only deadline is the end of the pause, if the pause has one. When
// that comes the budget resumes by itself, and the configuration it keeps
// in the store says so.

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

// paused reports whether the budget is paused now.
func (e *Engine) paused(a *account) bool { return a.pauseEnd > e.vnow }

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
// configuration without the pause.
func (e *Engine) endPause(a *account) {
	if a.pauseEnd == 0 || a.pauseEnd > e.vnow {
		return
	}
	a.pauseEnd = 0
	a.cfg.Paused, a.cfg.PausedUntil, a.cfg.UpdatedAt = false, 0, e.nowMs()
	e.journal.Append(store.PutBudget(a.cfg))
	e.pauseChanged(a)
}
