package core

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/engine"
)

// TestBindingEdit_Change checks each edit on a job bound to a (cost 1):
// what it leaves, and, for an edit that does not apply, the refusal of the
// single-job form against the filter form's leaving the job alone.
func TestBindingEdit_Change(t *testing.T) {
	t.Parallel()
	a, b := BindingSpec{Key: "a", Cost: 1}, BindingSpec{Key: "b", Cost: 2}
	for name, tc := range map[string]struct {
		edit    BindingEdit
		want    []engine.BindingSpec // nil with changed false: left alone
		changed bool
		refusal error // strict only; the lenient form leaves the job alone
	}{
		"AddNew":          {edit: BindingEdit{Op: BindAdd, Binding: b}, want: []engine.BindingSpec{{Key: "a", Cost: 1}, {Key: "b", Cost: 2}}, changed: true},
		"AddBound":        {edit: BindingEdit{Op: BindAdd, Binding: BindingSpec{Key: "a", Cost: 3}}, refusal: ErrConflict},
		"PutNew":          {edit: BindingEdit{Op: BindPut, Binding: b}, want: []engine.BindingSpec{{Key: "a", Cost: 1}, {Key: "b", Cost: 2}}, changed: true},
		"PutBound":        {edit: BindingEdit{Op: BindPut, Binding: BindingSpec{Key: "a", Cost: 3}}, want: []engine.BindingSpec{{Key: "a", Cost: 3}}, changed: true},
		"SetCostBound":    {edit: BindingEdit{Op: BindSetCost, Binding: BindingSpec{Key: "a", Cost: 5}}, want: []engine.BindingSpec{{Key: "a", Cost: 5}}, changed: true},
		"SetCostUnbound":  {edit: BindingEdit{Op: BindSetCost, Binding: BindingSpec{Key: "b", Cost: 5}}, refusal: ErrNotFound},
		"RemoveBound":     {edit: BindingEdit{Op: BindRemove, Binding: a}, want: []engine.BindingSpec{}, changed: true},
		"RemoveUnbound":   {edit: BindingEdit{Op: BindRemove, Binding: b}, refusal: ErrNotFound},
		"RemoveAll":       {edit: BindingEdit{Op: BindRemoveAll}, changed: true},
		"Replace":         {edit: BindingEdit{Op: BindReplace, Bindings: []BindingSpec{b}}, want: []engine.BindingSpec{{Key: "b", Cost: 2}}, changed: true},
		"ReplaceWithNone": {edit: BindingEdit{Op: BindReplace}, changed: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, strict := range []bool{true, false} {
				change, err := tc.edit.change(strict)
				require.NoError(t, err)
				got, changed, err := change([]engine.BindingSpec{engine.BindingSpec(a)})
				if tc.refusal != nil {
					if strict {
						require.ErrorIs(t, err, tc.refusal)
					} else {
						require.NoError(t, err)
						require.False(t, changed, "left alone")
					}
					continue
				}
				require.NoError(t, err)
				require.Equal(t, tc.changed, changed)
				require.Equal(t, tc.want, got)
			}
		})
	}
	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		_, err := BindingEdit{}.change(true)
		require.ErrorIs(t, err, ErrInvalid)
	})
}
