package core

import "github.com/zizq/zizq/server/budget"

// parseResetSchedule reads a calendar budget's reset expression for the
// engine (engine.Config.Resets); its errors name the field at fault.
func parseResetSchedule(expression, timezone string) (budget.Schedule, error) {
	s, err := parseReset(expression, timezone)
	if err != nil {
		return nil, err
	}
	return s, nil
}
