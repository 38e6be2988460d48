package client

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

// TestCalendarBody_MirrorsBudgetPatch keeps the calendar bodies in step
// with the api types they mirror: the same members under the same tags,
// the strategy with reset and timezone after them, and, with no calendar
// member, the very bytes of the api.BudgetPatch in both formats.
func TestCalendarBody_MirrorsBudgetPatch(t *testing.T) {
	t.Parallel()
	requireMirror(t, reflect.TypeFor[api.BudgetPatch](), reflect.TypeFor[calendarBudgetPatch](), 0)
	requireMirror(t, reflect.TypeFor[api.TemplatePatch](), reflect.TypeFor[calendarTemplatePatch](), 0)
	requireMirror(t, reflect.TypeFor[api.StrategyPatch](), reflect.TypeFor[calendarStrategyPatch](), 2)

	full := api.BudgetPatch{
		Allocation: api.Ptr[int64](7),
		Strategy:   &api.StrategyPatch{Type: api.Ptr(api.StrategyTimeBased), DurationMs: api.Ptr[int64](60000), Burst: api.Set[int64](3)},
		PerKey: api.Set(api.TemplatePatch{Allocation: api.Ptr[int64](2),
			Strategy: &api.StrategyPatch{Burst: api.Null[int64]()}}),
		Paused:      api.Set(true),
		PausedUntil: api.Null[uint64](),
	}
	for _, p := range []api.BudgetPatch{full, {}, {PerKey: api.Null[api.TemplatePatch]()}, {Strategy: &api.StrategyPatch{}}} {
		body, err := calendarBody(p, CalendarPatch{})
		require.NoError(t, err)
		for _, f := range []api.Format{api.JSON, api.MsgPack} {
			want, err := api.Marshal(f, p)
			require.NoError(t, err)
			got, err := api.Marshal(f, body)
			require.NoError(t, err)
			require.Equal(t, want, got, "format %d, patch %+v", f, p)
		}
	}
}

// requireMirror checks that mirror has api's fields, names, types (but
// for the patch types it mirrors too) and tags, then extra fields of its
// own.
func requireMirror(t *testing.T, apiType, mirror reflect.Type, extra int) {
	t.Helper()
	require.Equal(t, apiType.NumField()+extra, mirror.NumField(), "%s mirrors %s", mirror, apiType)
	for i := range apiType.NumField() {
		a, m := apiType.Field(i), mirror.Field(i)
		require.Equal(t, a.Name, m.Name, "%s field %d", mirror, i)
		require.Equal(t, a.Tag, m.Tag, "%s.%s", mirror, m.Name)
		if !strings.Contains(a.Type.String(), "Patch") { // the mirrored types differ by design
			require.Equal(t, a.Type, m.Type, "%s.%s", mirror, m.Name)
		}
	}
}
