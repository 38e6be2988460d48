package core

import (
	"math"
	"time"

	"github.com/robfig/cron/v3"
)

// resetSchedule is a calendar budget's reset expression in its timezone.
// Unlike the library, it reads the expression on the zone's wall clock: a
// reset named in an hour that daylight saving skips happens once, at the
// first instant after the gap; one named in an hour that is repeated
// happens once, at its first pass.
type resetSchedule struct {
	spec cron.Schedule
	loc  *time.Location
	// onWall is false for a fixed interval (@every), which runs on
	// absolute time: an hour skipped or repeated does not change it.
	onWall bool
}

// wallMargin is more than any zone's distance from UTC: an instant this
// far before another reads an earlier wall clock time, in any zone.
const wallMargin = 48 * time.Hour

// parseReset parses a budget's reset expression, read in the IANA timezone
// tz ("": UTC, not the server's zone, so that a budget resets at the same
// instants on every server). Its errors are the client's (422), naming the
// field at fault.
func parseReset(expression, tz string) (resetSchedule, error) {
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = loadTimezone(tz); err != nil {
			return resetSchedule{}, Unprocessable("strategy.timezone: %s", err)
		}
	}
	spec, err := parseExpression(expression)
	if err != nil {
		return resetSchedule{}, Unprocessable("strategy.reset: invalid cron expression: %s", err)
	}
	if err := checkInterval(expression); err != nil {
		return resetSchedule{}, Unprocessable("strategy.reset: %s", err)
	}
	_, onWall := spec.(*cron.SpecSchedule)
	return resetSchedule{spec: spec, loc: loc, onWall: onWall}, nil
}

// Next returns the first reset strictly after afterNs, in unix nanoseconds
// (whole seconds), or math.MaxInt64 if there is none within the library's
// five years or before maxScheduleMs.
func (s resetSchedule) Next(afterNs int64) int64 {
	after := time.Unix(0, afterNs)
	if !s.onWall {
		return unixNanoOrNever(s.spec.Next(after.UTC()))
	}
	// The library evaluates the wall clock in UTC, which has no daylight
	// saving; starting from the latest wall time already read makes the
	// second pass of a repeated hour name nothing again.
	w := s.spec.Next(wallReached(after, s.loc))
	if w.IsZero() {
		return math.MaxInt64
	}
	return unixNanoOrNever(firstInstantReading(w, s.loc))
}

// wallClock is t's wall clock time in its location, written as a UTC time.
func wallClock(t time.Time) time.Time {
	_, offset := t.Zone()
	return t.UTC().Add(time.Duration(offset) * time.Second)
}

// wallReached returns the latest wall clock time that loc read at any
// instant up to t: t's own, unless t is in the second pass of a repeated
// hour, whose first pass read later times.
func wallReached(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc)
	reached := wallClock(t)
	earliest := t.Add(-wallMargin)
	for start, _ := t.ZoneBounds(); !start.IsZero() && start.After(earliest); {
		lastOfPrevious := start.Add(-time.Nanosecond)
		if w := wallClock(lastOfPrevious); w.After(reached) {
			reached = w
		}
		start, _ = lastOfPrevious.ZoneBounds()
	}
	return reached
}

// firstInstantReading returns the first instant whose wall clock in loc
// reads w or later: in a skipped hour, the instant the gap ends; in a
// repeated hour, the first pass.
func firstInstantReading(w time.Time, loc *time.Location) time.Time {
	// The walk ends: each step moves to a later period, and one that
	// starts after w+wallMargin reads later than w.
	for t := w.Add(-wallMargin).In(loc); ; {
		if !wallClock(t).Before(w) {
			return t // a gap jumped over w; only a period's start gets here
		}
		_, offset := t.Zone()
		shift := time.Duration(offset) * time.Second
		// This period reads up to (not including) its end in its own offset.
		_, end := t.ZoneBounds()
		if end.IsZero() || w.Before(end.UTC().Add(shift)) {
			return w.Add(-shift)
		}
		t = end
	}
}

// unixNanoOrNever returns t in unix nanoseconds, or math.MaxInt64 if t is
// the library's "none" or past the last deadline the engine can hold.
func unixNanoOrNever(t time.Time) int64 {
	if t.IsZero() || t.Unix() > maxScheduleMs/1000 {
		return math.MaxInt64
	}
	return t.UnixNano()
}
