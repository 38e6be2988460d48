package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zizq/zizq/api"
)

// Adaptive budgets (issue 26): a budget the upstream refused pays below
// its configured rate for a while, or nothing at all until a refusal's
// retry-after ends. Its row carries backoffMark after the key, in the
// warning colour; the detail panel says how far it backed off.

// backoffMark follows the key of a budget that backs off.
const backoffMark = " ▼"

// backingOff reports whether a budget's live figures say it pays less
// than configured at nowMs: below its rate, or nothing until a
// retry-after ends.
func backingOff(b api.Budget, nowMs int64) bool {
	s := b.State
	if s == nil {
		return false
	}
	below := s.EffectiveAllocation != nil && *s.EffectiveAllocation < float64(b.Allocation)
	return below || throttledAt(s, nowMs)
}

// throttledAt reports whether a refusal's retry-after still runs at nowMs.
func throttledAt(s *api.BudgetState, nowMs int64) bool {
	return s.ThrottledUntil != nil && *s.ThrottledUntil > nowMs
}

// adaptiveWords says how an adaptive budget backs off: "backs off ×0.5,
// floor 5%, recovers in 1m"; "" for a budget that does not.
func adaptiveWords(b api.Budget) string {
	a := b.Adaptive
	if a == nil {
		return ""
	}
	return fmt.Sprintf("backs off ×%s, floor %s%%, recovers in %s",
		strconv.FormatFloat(a.Decrease, 'g', -1, 64), fmtTokens(a.Floor*100), fmtPeriod(a.RecoverMs))
}

// backoffWords says how a budget backs off now: "effective 50/1s of
// 100/1s · throttled 2 times · pays nothing for 25s (12:00:25)"; "" for a
// budget never throttled, or without live figures.
func (m *Model) backoffWords(b api.Budget) string {
	s := b.State
	if s == nil || s.EffectiveAllocation == nil {
		return ""
	}
	nowMs := m.now.UnixMilli()
	var parts []string
	if *s.EffectiveAllocation < float64(b.Allocation) {
		parts = append(parts, "effective "+rateOf(b, *s.EffectiveAllocation)+" of "+rateOf(b, float64(b.Allocation)))
	}
	if s.Throttles != nil && *s.Throttles > 0 {
		parts = append(parts, "throttled "+plural(*s.Throttles, "time", "times"))
	}
	if throttledAt(s, nowMs) {
		parts = append(parts, "pays nothing for "+until(nowMs, *s.ThrottledUntil)+" ("+m.clock(*s.ThrottledUntil)+")")
	}
	return strings.Join(parts, " · ")
}

// rateOf writes an allocation in a budget's terms: per its duration for
// time_based ("50/1s"), plain tokens for the others.
func rateOf(b api.Budget, alloc float64) string {
	n := fmtTokens(alloc)
	if b.Strategy.Type == api.StrategyTimeBased {
		return n + "/" + fmtPeriod(b.Strategy.DurationMs)
	}
	return n
}
