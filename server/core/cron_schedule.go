package core

import (
	"fmt"
	"math"
	"strings"
	"time"
	_ "time/tzdata" // timezones resolve the same on every machine, tzdata installed or not

	"github.com/robfig/cron/v3"
)

// schedule is a parsed cron expression in its timezone.
type schedule struct {
	spec cron.Schedule
	loc  *time.Location
}

// cronParser reads 5 fields (minute first) or 6 (seconds first), and the
// descriptors (@hourly, @every 5m, ...).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxScheduleMs is the last moment the engine's nanosecond deadlines can
// hold (year 2262): an occurrence after it counts as none.
const maxScheduleMs = math.MaxInt64 / int64(time.Millisecond)

// parseSchedule parses an expression evaluated in the IANA timezone tz
// ("": the server's local zone). Its errors are the client's (400).
func parseSchedule(expression, tz string) (schedule, error) {
	loc, err := loadTimezone(tz)
	if err != nil {
		return schedule{}, err
	}
	spec, err := parseExpression(expression)
	if err != nil {
		return schedule{}, Invalid("invalid cron expression: %s", err)
	}
	return schedule{spec: spec, loc: loc}, nil
}

// parseExpression parses with the library, refusing its timezone prefix
// (the entry's timezone field says that) and any panic it might raise on
// input it did not foresee.
func parseExpression(expression string) (spec cron.Schedule, err error) {
	trimmed := strings.TrimSpace(expression)
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return nil, fmt.Errorf("a timezone prefix is not supported: use the entry's timezone")
	}
	defer func() {
		if r := recover(); r != nil {
			spec, err = nil, fmt.Errorf("cannot parse %q", expression)
		}
	}()
	return cronParser.Parse(trimmed)
}

// everyPrefix starts the library's fixed-interval descriptor.
const everyPrefix = "@every "

// checkInterval refuses a fixed interval that the library would not run
// as written: it runs one below a second every second, and drops the part
// of one that is not whole seconds. Stored entries are not checked again
// at start, so one put before the check still loads.
func checkInterval(expression string) error {
	rest, ok := strings.CutPrefix(strings.TrimSpace(expression), everyPrefix)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(rest))
	if err != nil {
		return nil // parseExpression has refused it
	}
	switch {
	case d < time.Second:
		return Unprocessable("invalid cron expression %q: the interval must be at least 1s", expression)
	case d%time.Second != 0:
		return Unprocessable("invalid cron expression %q: the interval must be a whole number of seconds", expression)
	}
	return nil
}

// loadTimezone resolves an IANA name; "" is the server's local zone.
func loadTimezone(tz string) (*time.Location, error) {
	if tz == "" {
		return time.Local, nil
	}
	// LoadLocation takes "Local" for the machine's zone; it is not an IANA
	// name, and a client meaning "the server's zone" omits the field.
	if tz == "Local" {
		return nil, Invalid("invalid timezone: %q", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, Invalid("invalid timezone: %q", tz)
	}
	return loc, nil
}

// next returns the first occurrence after the second that holds afterMs,
// in unix milliseconds, or 0 if there is none (within the library's five
// years, and before maxScheduleMs).
func (s schedule) next(afterMs int64) int64 {
	after := time.UnixMilli(afterMs).In(s.loc)
	n := s.spec.Next(after)
	if n.IsZero() || !n.After(after) {
		return 0
	}
	ms := n.UnixMilli()
	if ms <= afterMs || ms > maxScheduleMs {
		return 0
	}
	return ms
}
