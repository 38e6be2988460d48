package core

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The budget engine takes a reset schedule through this method alone.
var _ interface{ Next(afterNs int64) int64 } = resetSchedule{}

func nsAt(t *testing.T, s string) int64 {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v.UnixNano()
}

func mustParseReset(t *testing.T, expr, tz string) resetSchedule {
	t.Helper()
	s, err := parseReset(expr, tz)
	require.NoError(t, err)
	return s
}

func TestResetSchedule_Next(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, expr, tz, after, want string
	}{
		{"FiveFields", "*/15 * * * *", "UTC", "2026-03-01T12:00:00Z", "2026-03-01T12:15:00Z"},
		{"SixFields", "30 * * * * *", "UTC", "2026-03-01T12:00:30Z", "2026-03-01T12:01:30Z"},
		{"DefaultUTC", "0 9 * * *", "", "2026-03-01T00:00:00Z", "2026-03-01T09:00:00Z"},
		{"Timezone", "0 9 * * *", "Asia/Tokyo", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"},
		{"Descriptor", "@daily", "Asia/Tokyo", "2026-03-01T00:00:00Z", "2026-03-01T15:00:00Z"},
		{"StrictlyAfterExact", "0 12 * * *", "UTC", "2026-03-01T12:00:00Z", "2026-03-02T12:00:00Z"},
		{"StrictlyAfterNs", "0 12 * * *", "UTC", "2026-03-01T12:00:00.000000001Z", "2026-03-02T12:00:00Z"},
		{"JustBeforeNs", "0 12 * * *", "UTC", "2026-03-01T11:59:59.999999999Z", "2026-03-01T12:00:00Z"},
		{"Monthly", "0 0 1 * *", "Europe/Paris", "2026-03-15T00:00:00Z", "2026-03-31T22:00:00Z"},
		{"MonthlyFromReset", "0 0 1 * *", "Europe/Paris", "2026-03-31T22:00:00Z", "2026-04-30T22:00:00Z"},
		{"Weekly", "0 0 * * MON", "UTC", "2026-03-01T12:00:00Z", "2026-03-02T00:00:00Z"},
		{"WeeklyInZone", "0 0 * * MON", "America/New_York", "2026-03-02T04:59:59Z", "2026-03-02T05:00:00Z"},
		{"Never", "0 0 30 2 *", "Europe/Paris", "2026-03-01T12:00:00Z", ""},
		{"AfterLastDeadline", "* * * * *", "UTC", "2262-04-11T23:47:16.854775807Z", ""},
		{"Every", "@every 90s", "UTC", "2026-03-01T12:00:00.250Z", "2026-03-01T12:01:30Z"},
		{"EveryAbsoluteAcrossGap", "@every 1h", "Europe/Paris", "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"},
		{"EveryAbsoluteAcrossOverlap", "@every 1h", "Europe/Paris", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z"},
		{"EveryPastYear2262", "@every 2562047h", "UTC", "2026-03-01T12:00:00Z", ""},

		// Europe/Paris springs forward on 2026-03-29 at 02:00 CET (01:00Z)
		// to 03:00 CEST: 02:30 that day is never read.
		{"GapResetsAtGapEnd", "30 2 * * *", "Europe/Paris", "2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z"},
		{"GapResetsOnce", "30 2 * * *", "Europe/Paris", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"},
		{"GapStartNotSkipped", "0 2 * * *", "Europe/Paris", "2026-03-29T00:59:59Z", "2026-03-29T01:00:00Z"},
		{"GapEndHourOnce", "0 3 * * *", "Europe/Paris", "2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z"},
		// It falls back on 2026-10-25 at 03:00 CEST (01:00Z) to 02:00 CET:
		// 02:30 is read at 00:30Z and again at 01:30Z.
		{"OverlapFirstPass", "30 2 * * *", "Europe/Paris", "2026-10-24T23:00:00Z", "2026-10-25T00:30:00Z"},
		{"OverlapOnce", "30 2 * * *", "Europe/Paris", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		{"InSecondPass", "*/15 * * * *", "Europe/Paris", "2026-10-25T01:20:00Z", "2026-10-25T02:00:00Z"},
		{"AtOverlapStart", "*/15 * * * *", "Europe/Paris", "2026-10-25T00:59:59.5Z", "2026-10-25T02:00:00Z"},

		// America/New_York: 2026-03-08 02:00 EST to 03:00 EDT; 2026-11-01
		// 02:00 EDT to 01:00 EST.
		{"NewYorkGap", "30 2 * * *", "America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z"},
		{"NewYorkGapOnce", "30 2 * * *", "America/New_York", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"},
		{"NewYorkOverlap", "30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", "2026-11-01T05:30:00Z"},
		{"NewYorkOverlapOnce", "30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},

		// Australia/Lord_Howe shifts by half an hour: 2026-04-05 02:00
		// (+11) to 01:30 (+10:30); 2026-10-04 02:00 (+10:30) to 02:30 (+11).
		{"LordHoweOverlap", "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", "2026-04-04T14:45:00Z"},
		{"LordHoweOverlapOnce", "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"},
		{"LordHoweGap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00Z", "2026-10-03T15:30:00Z"},
		{"LordHoweGapOnce", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"},

		// America/Havana skips midnight: 2026-03-08 00:00 (-5) to 01:00 (-4).
		{"MidnightInGap", "0 0 * * *", "America/Havana", "2026-03-07T12:00:00Z", "2026-03-08T05:00:00Z"},
		// Pacific/Apia skipped 2011-12-30 whole: 23:59:59 on the 29th
		// (-10) was followed by 00:00 on the 31st (+14).
		{"SkippedDay", "0 12 * * *", "Pacific/Apia", "2011-12-29T22:00:00Z", "2011-12-30T10:00:00Z"},
		{"SkippedDayOnce", "0 12 * * *", "Pacific/Apia", "2011-12-30T10:00:00Z", "2011-12-30T22:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustParseReset(t, tc.expr, tc.tz)
			want := int64(math.MaxInt64)
			if tc.want != "" {
				want = nsAt(t, tc.want)
			}
			got := s.Next(nsAt(t, tc.after))
			require.Equal(t, time.Unix(0, want).UTC(), time.Unix(0, got).UTC())
		})
	}
}

func TestResetSchedule_NextAfterMaxInt64(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"* * * * * *", "@every 1s"} {
		require.Equal(t, int64(math.MaxInt64), mustParseReset(t, expr, "Europe/Paris").Next(math.MaxInt64), expr)
	}
}

func TestParseReset_DefaultsToUTC(t *testing.T) {
	t.Parallel()
	// Not the server's zone, which "" means for cron entries.
	require.Same(t, time.UTC, mustParseReset(t, "0 0 * * *", "").loc)
}

func TestParseReset_Refuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, tz, msg string }{
		{"* * * *", "", "strategy.reset: invalid cron expression: expected 5 to 6 fields, found 4: [* * * *]"},
		{"", "", "strategy.reset: invalid cron expression: empty spec string"},
		{"CRON_TZ=UTC * * * * *", "", "strategy.reset: invalid cron expression: a timezone prefix is not supported: use the entry's timezone"},
		{"@reboot", "UTC", "strategy.reset: invalid cron expression: unrecognized descriptor: @reboot"},
		{"@every 500ms", "", `strategy.reset: invalid cron expression "@every 500ms": the interval must be at least 1s`},
		{"@every 1500ms", "", `strategy.reset: invalid cron expression "@every 1500ms": the interval must be a whole number of seconds`},
		{"* * * * *", "Europe/Atlantis", `strategy.timezone: invalid timezone: "Europe/Atlantis"`},
		{"* * * * *", "Local", `strategy.timezone: invalid timezone: "Local"`},
		{"* * * * *", "../../etc/passwd", `strategy.timezone: invalid timezone: "../../etc/passwd"`},
	} {
		_, err := parseReset(tc.expr, tc.tz)
		require.ErrorIs(t, err, ErrUnprocessable, tc.expr)
		require.EqualError(t, err, tc.msg)
	}
}

// walkResets returns the resets strictly after from and up to to, found by
// chaining Next.
func walkResets(s resetSchedule, from, to time.Time) []time.Time {
	var resets []time.Time
	for ns := s.Next(from.UnixNano()); ns <= to.UnixNano(); ns = s.Next(ns) {
		resets = append(resets, time.Unix(0, ns).UTC())
	}
	return resets
}

func TestResetSchedule_FallBackResetsOnce(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	s := mustParseReset(t, "30 2 * * *", "Europe/Paris")
	resets := walkResets(s, time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 27, 0, 0, 0, 0, time.UTC))
	perDay := map[string][]time.Time{}
	for _, r := range resets {
		day := r.In(paris).Format(time.DateOnly)
		perDay[day] = append(perDay[day], r)
	}
	require.Equal(t, []time.Time{time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)}, perDay["2026-10-25"])
	require.Len(t, perDay, 3, "%v", resets) // the 24th, 25th and 26th, once each
}

func TestResetSchedule_HourlyAcrossTransitions(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	s := mustParseReset(t, "0 * * * *", "Europe/Paris")
	for _, tc := range []struct {
		name    string
		day     time.Time
		skipped string // the wall hour never reset
	}{
		{"Gap", time.Date(2026, 3, 29, 0, 0, 0, 0, paris), "2026-03-29 02:00"}, // not read
		{"Overlap", time.Date(2026, 10, 25, 0, 0, 0, 0, paris), ""},            // 02:00 read twice, reset once
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resets := walkResets(s, tc.day.Add(-time.Second), tc.day.AddDate(0, 0, 1).Add(-time.Second))
			var walls []string
			for i, r := range resets {
				if i > 0 {
					require.True(t, r.After(resets[i-1]), "%v repeats or goes back", r)
				}
				walls = append(walls, r.In(paris).Format("2006-01-02 15:04"))
			}
			var want []string
			for h := range 24 {
				wall := tc.day.Format(time.DateOnly) + fmt.Sprintf(" %02d:00", h)
				if wall != tc.skipped {
					want = append(want, wall)
				}
			}
			require.Equal(t, want, walls)
		})
	}
}

func TestResetSchedule_EveryFiveSecondsAcrossGap(t *testing.T) {
	t.Parallel()
	s := mustParseReset(t, "*/5 * * * * *", "Europe/Paris")
	gap := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	resets := walkResets(s, gap.Add(-time.Hour), gap.Add(time.Hour))
	require.Len(t, resets, 2*3600/5)
	for i := 1; i < len(resets); i++ {
		d := resets[i].Sub(resets[i-1])
		require.True(t, d > 0 && d <= 5*time.Second, "%v after %v", resets[i], resets[i-1])
	}
	require.Contains(t, resets, gap)
}

// oracleResets steps through every second in (from, to] and returns the
// instants at which loc's wall clock first reaches or passes a wall time
// that the expression names (per the library, read in UTC).
func oracleResets(t *testing.T, expr string, loc *time.Location, from, to time.Time) []time.Time {
	t.Helper()
	spec, err := cronParser.Parse(expr)
	require.NoError(t, err)
	wallOf := func(at time.Time) time.Time {
		l := at.In(loc)
		y, mo, d := l.Date()
		h, mi, sec := l.Clock()
		return time.Date(y, mo, d, h, mi, sec, 0, time.UTC)
	}
	// Every wall time read in the window is within a day of its instant.
	var named []time.Time
	for w := spec.Next(from.Add(-36 * time.Hour)); !w.IsZero() && w.Before(to.Add(36*time.Hour)); w = spec.Next(w) {
		named = append(named, w)
	}
	var resets []time.Time
	highest := wallOf(from)
	for at := from.Add(time.Second); !at.After(to); at = at.Add(time.Second) {
		wall := wallOf(at)
		if !wall.After(highest) {
			continue // a repeated wall time
		}
		// Is a named wall time in (highest, wall]?
		i := sort.Search(len(named), func(i int) bool { return named[i].After(highest) })
		if i < len(named) && !named[i].After(wall) {
			resets = append(resets, at)
		}
		highest = wall
	}
	return resets
}

func TestResetSchedule_MatchesOracle(t *testing.T) {
	t.Parallel()
	windows := []struct {
		zone string
		from time.Time // two days around a transition
	}{
		{"Europe/Paris", time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC)},
		{"Europe/Paris", time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC)},
		{"America/New_York", time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)},
		{"America/New_York", time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC)},
		{"Australia/Lord_Howe", time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)},
		{"Australia/Lord_Howe", time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)},
		{"America/Havana", time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)},
		{"America/Havana", time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC)},
		{"Pacific/Apia", time.Date(2011, 12, 29, 0, 0, 0, 0, time.UTC)},
	}
	exprs := []string{"30 2 * * *", "0 0 * * *", "45 1 * * *", "15,45 0-3 * * *", "*/7 * * * *", "0 * * * *", "17 */3 * * * *"}
	for _, w := range windows {
		for _, expr := range exprs {
			t.Run(fmt.Sprintf("%s/%s/%s", w.zone, w.from.Format(time.DateOnly), expr), func(t *testing.T) {
				t.Parallel()
				loc, err := time.LoadLocation(w.zone)
				require.NoError(t, err)
				s := mustParseReset(t, expr, w.zone)
				to := w.from.Add(48 * time.Hour)
				want := oracleResets(t, expr, loc, w.from, to)
				require.NotEmpty(t, want)
				require.Equal(t, want, walkResets(s, w.from, to))

				rng := rand.New(rand.NewPCG(uint64(len(expr)), uint64(w.from.Unix())))
				for range 300 {
					after := w.from.Add(time.Duration(rng.Int64N(int64(to.Sub(w.from)))))
					if rng.IntN(4) == 0 {
						after = want[rng.IntN(len(want))] // exactly at a reset
					}
					got := s.Next(after.UnixNano())
					i := sort.Search(len(want), func(i int) bool { return want[i].After(after) })
					if i == len(want) {
						require.Greater(t, got, to.UnixNano(), "after %v", after)
						continue
					}
					require.Equal(t, want[i], time.Unix(0, got).UTC(), "after %v", after)
				}
			})
		}
	}
}
