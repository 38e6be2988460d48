package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zizq/zizq/api"
)

// A weighted family's tenants (issue 26): each extras round reads the
// family's sub-budgets (budget_extras.go), whose dispatched counts the
// rounds of the last minute turn into each tenant's share of the family's
// dispatches, shown beside its fair share: its weight over the weights of
// the tenants served in that minute or waiting now.

// shareWindow is the last minute of a family's rounds.
type shareWindow struct {
	last    map[string]int64 // each sub-key's dispatched count at the last round
	rounds  []shareRound     // the rounds of the last minute, oldest first
	weights map[string]int64 // each live sub-key's weight at the last round
	parked  map[string]bool  // the live sub-keys with jobs waiting
}

// shareRound is what one round saw dispatched since the one before.
type shareRound struct {
	at   time.Time
	sent map[string]int64
}

// shareSpan is how far back the shares look.
const shareSpan = time.Minute

// observe adds a round that read subs at now: a sub-budget's dispatched
// count since the previous round (all of it when the sub-budget is new, or
// was dropped and made again since). Nil-safe: the first round makes the
// window, and counts nothing, having nothing to count from.
func (w *shareWindow) observe(now time.Time, subs []api.Budget) *shareWindow {
	first := w == nil
	if first {
		w = &shareWindow{}
	}
	cur := make(map[string]int64, len(subs))
	w.weights, w.parked = make(map[string]int64, len(subs)), map[string]bool{}
	sent := map[string]int64{}
	for _, s := range subs {
		w.weights[s.Key] = max(s.Weight, 1)
		if s.State == nil {
			continue
		}
		n := s.State.Dispatched
		cur[s.Key] = n
		if s.State.Parked > 0 {
			w.parked[s.Key] = true
		}
		if first {
			continue
		}
		prev, seen := w.last[s.Key]
		switch {
		case !seen || n < prev:
			sent[s.Key] = n
		case n > prev:
			sent[s.Key] = n - prev
		}
	}
	w.last = cur
	if !first {
		w.rounds = append(w.rounds, shareRound{at: now, sent: sent})
	}
	for len(w.rounds) > 0 && now.Sub(w.rounds[0].at) > shareSpan {
		w.rounds = w.rounds[1:]
	}
	return w
}

// tenantShare is one tenant's line: its weight, its share of the window's
// dispatches and its fair share, in [0, 1].
type tenantShare struct {
	key         string
	weight      int64
	share, fair float64
}

// shares returns the tenants served in the window or waiting now, most
// served first; none before a dispatch was seen.
func (w *shareWindow) shares() []tenantShare {
	if w == nil {
		return nil
	}
	sent := map[string]int64{}
	var total int64
	for _, r := range w.rounds {
		for k, n := range r.sent {
			sent[k] += n
			total += n
		}
	}
	if total == 0 {
		return nil
	}
	active := map[string]bool{}
	for k := range sent {
		active[k] = true
	}
	for k := range w.parked {
		active[k] = true
	}
	var weights int64
	for k := range active {
		weights += w.weightOf(k)
	}
	out := make([]tenantShare, 0, len(active))
	for k := range active {
		out = append(out, tenantShare{key: k, weight: w.weightOf(k),
			share: float64(sent[k]) / float64(total), fair: float64(w.weightOf(k)) / float64(weights)})
	}
	slices.SortFunc(out, func(a, b tenantShare) int {
		return cmp.Or(cmp.Compare(b.share, a.share), cmp.Compare(b.fair, a.fair), cmp.Compare(a.key, b.key))
	})
	return out
}

// weightOf is a sub-key's weight at the last round; 1 for one no longer
// live (its weight is not known any more: the family's default).
func (w *shareWindow) weightOf(key string) int64 {
	if n, ok := w.weights[key]; ok {
		return n
	}
	return 1
}

// sharesShown is how many tenants the shares line names.
const sharesShown = 4

// sharesWords says, for a family, what its busiest tenants had of its
// dispatches over the last minute and their fair shares: "last minute
// (fair share): acme×3 71% (75%), delta 24% (25%), …"; "" before any.
func (m *Model) sharesWords(b api.Budget) string {
	fam, ok := m.families[b.Key]
	if !ok || b.PerKey == nil {
		return ""
	}
	all := fam.window.shares()
	if len(all) == 0 {
		return ""
	}
	parts := make([]string, 0, sharesShown+1)
	for _, s := range all[:min(sharesShown, len(all))] {
		parts = append(parts, fmt.Sprintf("%s%s %s (%s)", strings.TrimPrefix(s.key, b.Key+"/"), weightMark(s.weight), percent(s.share), percent(s.fair)))
	}
	if len(all) > sharesShown {
		parts = append(parts, "…")
	}
	return "last minute (fair share): " + strings.Join(parts, ", ")
}

// weightMark is "×3" for a tenant of weight 3, "" for the default 1.
func weightMark(w int64) string {
	if w <= 1 {
		return ""
	}
	return "×" + itoa(w)
}

func percent(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }
