package core

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// TestCronTemplate_CoversNewJob fails when engine.NewJob gains a field
// that cron templates do not keep: add it to cronTemplate (and to the
// transports' echo), then here.
func TestCronTemplate_CoversNewJob(t *testing.T) {
	t.Parallel()
	kept := map[string]bool{
		"Type": true, "Queue": true, "Priority": true, "Payload": true, "RetryLimit": true,
		"Backoff": true, "Retention": true, "Budgets": true, "UniqueKey": true, "UniqueWhile": true,
		"Batch":         true,
		"ReadyAt":       true, // refused in templates
		"StartBy":       true, // refused in templates: start_within_ms is kept
		"StartWithinMs": true,
		"BatchOpen":     true, // not a request's: the core decides it at each enqueue
	}
	typ := reflect.TypeFor[engine.NewJob]()
	for i := range typ.NumField() {
		require.True(t, kept[typ.Field(i).Name], "engine.NewJob.%s is not kept by cron templates", typ.Field(i).Name)
	}
}

func TestCronTemplate_RoundTrip(t *testing.T) {
	t.Parallel()
	limit, done, dead := uint32(0), uint64(0), uint64(1<<63)
	for name, j := range map[string]engine.NewJob{
		"Minimal": {Type: "t", Queue: "q", Priority: 32768, Payload: []byte("null")},
		"Batched": {
			Type: "t", Queue: "q", Payload: []byte(`{"ids":[1]}`),
			Batch: &store.BatchConfig{Key: "k/<&>", When: `($existing.ids | length) < 10`, Fold: `$existing | .ids += $new.ids`},
		},
		"Full": {
			Type: "t", Queue: "q", Priority: 1, Payload: []byte(`{"a":"<&>","n":18446744073709551615}`),
			RetryLimit: &limit, Backoff: &store.Backoff{Exponent: 1.5, BaseMs: 2, JitterMs: 3},
			UniqueKey: "k/<&>", UniqueWhile: store.UniqueExists,
			Retention: &store.Retention{CompletedMs: &done, DeadMs: &dead}, StartWithinMs: 60_000,
			Budgets: []engine.BindingSpec{
				{Key: "a", Cost: 2},
				{Key: "b", Cost: 1, CreateWith: &store.Budget{Allocation: 5, Strategy: store.TimeBased, DurationMs: 60000, Burst: 2}},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := encodeTemplate(j)
			require.NoError(t, err)
			got, err := decodeTemplate(data)
			require.NoError(t, err)
			require.Equal(t, j, got)
		})
	}
}

func TestSchedule_Next(t *testing.T) {
	t.Parallel()
	at := func(s string) int64 {
		v, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return v.UnixMilli()
	}
	for _, tc := range []struct {
		name, expr, tz, after, want string
	}{
		{"FiveFields", "*/15 * * * *", "UTC", "2026-03-01T12:00:00Z", "2026-03-01T12:15:00Z"},
		{"StrictlyAfter", "0 12 * * *", "UTC", "2026-03-01T12:00:00.999Z", "2026-03-02T12:00:00Z"},
		{"SixFields", "30 * * * * *", "UTC", "2026-03-01T12:00:30Z", "2026-03-01T12:01:30Z"},
		{"Timezone", "0 9 * * *", "Asia/Tokyo", "2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z"},
		{"Every", "@every 90s", "UTC", "2026-03-01T12:00:00.250Z", "2026-03-01T12:01:30Z"},
		{"Never", "0 0 30 2 *", "UTC", "2026-03-01T12:00:00Z", ""},
		{"PastYear2262", "@every 2562047h", "UTC", "2026-03-01T12:00:00Z", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := parseSchedule(tc.expr, tc.tz)
			require.NoError(t, err)
			want := int64(0)
			if tc.want != "" {
				want = at(tc.want)
			}
			require.Equal(t, want, s.next(at(tc.after)))
		})
	}
}

func TestSchedule_Refuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, tz, msg string }{
		{"* * * *", "", "invalid cron expression: expected 5 to 6 fields, found 4: [* * * *]"},
		{"CRON_TZ=UTC * * * * *", "", "invalid cron expression: a timezone prefix is not supported: use the entry's timezone"},
		{"TZ=UTC", "", "invalid cron expression: a timezone prefix is not supported: use the entry's timezone"},
		{"@reboot", "", "invalid cron expression: unrecognized descriptor: @reboot"},
		{"* * * * *", "Europe/Atlantis", `invalid timezone: "Europe/Atlantis"`},
		{"* * * * *", "../../etc/passwd", `invalid timezone: "../../etc/passwd"`},
	} {
		_, err := parseSchedule(tc.expr, tc.tz)
		require.ErrorIs(t, err, ErrInvalid, tc.expr)
		require.EqualError(t, err, tc.msg)
	}
}
