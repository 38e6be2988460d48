package client

import (
	"context"
	"errors"
	"net/http"

	"github.com/zizq/zizq/api"
)

// CalendarPatch holds the members of a calendar strategy (our extension)
// that a budget patch sets beside an api.BudgetPatch, whose StrategyPatch
// has no room for them: the cron expression of the resets and the
// timezone it is read in ("" is UTC), of the budget's own strategy and of
// its family template's. Nil leaves a member as it is.
type CalendarPatch struct {
	Reset, Timezone             *string
	PerKeyReset, PerKeyTimezone *string
}

func (c CalendarPatch) ownSet() bool    { return c.Reset != nil || c.Timezone != nil }
func (c CalendarPatch) perKeySet() bool { return c.PerKeyReset != nil || c.PerKeyTimezone != nil }

// PatchBudgetCalendar is PatchBudget with the members of a calendar
// strategy: p.Strategy.Type "calendar" with cal.Reset turns a budget into
// a calendar budget, cal.Reset alone moves a calendar budget's resets.
// A cal of only nil members sends p as PatchBudget does.
func (c *Client) PatchBudgetCalendar(ctx context.Context, key string, p api.BudgetPatch, cal CalendarPatch) (*api.Budget, error) {
	if !cal.ownSet() && !cal.perKeySet() {
		return c.PatchBudget(ctx, key, p)
	}
	body, err := calendarBody(p, cal)
	if err != nil {
		return nil, err
	}
	var out api.Budget
	if _, err := c.do(ctx, call{method: http.MethodPatch, path: "/budgets/" + seg(key), body: body}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// The bodies below mirror api.BudgetPatch, TemplatePatch and StrategyPatch
// member for member, the strategy with reset and timezone added
// (TestCalendarBody_MirrorsBudgetPatch keeps them in step).

type calendarBudgetPatch struct {
	Allocation  *int64                              `json:"allocation,omitempty"`
	Strategy    *calendarStrategyPatch              `json:"strategy,omitempty"`
	PerKey      api.Nullable[calendarTemplatePatch] `json:"per_key,omitempty,omitzero"`
	Paused      api.Nullable[bool]                  `json:"paused,omitempty,omitzero"`
	PausedUntil api.Nullable[uint64]                `json:"paused_until,omitempty,omitzero"`
}

type calendarTemplatePatch struct {
	Allocation *int64                 `json:"allocation,omitempty"`
	Strategy   *calendarStrategyPatch `json:"strategy,omitempty"`
}

type calendarStrategyPatch struct {
	Type       *string             `json:"type,omitempty"`
	DurationMs *int64              `json:"duration_ms,omitempty"`
	Burst      api.Nullable[int64] `json:"burst,omitempty,omitzero"`
	Reset      *string             `json:"reset,omitempty"`
	Timezone   *string             `json:"timezone,omitempty"`
}

// calendarBody is p with cal's members in its strategies. A template's
// reset cannot come with per_key null, which makes the family plain.
func calendarBody(p api.BudgetPatch, cal CalendarPatch) (calendarBudgetPatch, error) {
	body := calendarBudgetPatch{
		Allocation:  p.Allocation,
		Strategy:    calendarStrategy(p.Strategy, cal.Reset, cal.Timezone),
		Paused:      p.Paused,
		PausedUntil: p.PausedUntil,
	}
	t, set := p.PerKey.Get()
	switch {
	case p.PerKey.IsNull() && cal.perKeySet():
		return calendarBudgetPatch{}, errors.New("a family template's reset or timezone cannot come with per_key null")
	case p.PerKey.IsNull():
		body.PerKey = api.Null[calendarTemplatePatch]()
	case set || cal.perKeySet():
		body.PerKey = api.Set(calendarTemplatePatch{
			Allocation: t.Allocation,
			Strategy:   calendarStrategy(t.Strategy, cal.PerKeyReset, cal.PerKeyTimezone),
		})
	}
	return body, nil
}

func calendarStrategy(s *api.StrategyPatch, reset, timezone *string) *calendarStrategyPatch {
	if s == nil && reset == nil && timezone == nil {
		return nil
	}
	out := &calendarStrategyPatch{Reset: reset, Timezone: timezone}
	if s != nil {
		out.Type, out.DurationMs, out.Burst = s.Type, s.DurationMs, s.Burst
	}
	return out
}
