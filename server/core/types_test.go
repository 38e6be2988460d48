package core

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/engine"
)

// TestNewJob_MirrorsTheEngine fails when the core's enqueue request and
// the engine's differ by a field: engineJob and coreJob copy field by
// field, and a field on one side only would be dropped silently. BatchOpen
// is the engine's alone: the core decides it, never a transport.
func TestNewJob_MirrorsTheEngine(t *testing.T) {
	t.Parallel()
	names := func(typ reflect.Type, except string) []string {
		var out []string
		for i := range typ.NumField() {
			if name := typ.Field(i).Name; name != except {
				out = append(out, name)
			}
		}
		return out
	}
	require.Equal(t, names(reflect.TypeFor[engine.NewJob](), "BatchOpen"), names(reflect.TypeFor[NewJob](), ""))
}

func TestEngineJobs_KeepEachJobsBindings(t *testing.T) {
	t.Parallel()
	specs := []NewJob{
		{Type: "a", Budgets: []BindingSpec{{Key: "x", Cost: 1}, {Key: "y", Cost: 2}}},
		{Type: "b"},
		{Type: "c", Budgets: []BindingSpec{{Key: "z", Cost: 3}}},
	}
	got := engineJobs(specs)
	require.Len(t, got, 3)
	require.Equal(t, []engine.BindingSpec{{Key: "x", Cost: 1}, {Key: "y", Cost: 2}}, got[0].Budgets)
	require.Nil(t, got[1].Budgets)
	require.Equal(t, []engine.BindingSpec{{Key: "z", Cost: 3}}, got[2].Budgets)
	for i := range specs {
		require.Equal(t, specs[i], coreJob(got[i]), "round trip of job %d", i)
	}
	got[0].Budgets = append(got[0].Budgets, engine.BindingSpec{Key: "w"})
	require.Equal(t, "z", got[2].Budgets[0].Key, "an append to one job's bindings does not reach the next's")
}
