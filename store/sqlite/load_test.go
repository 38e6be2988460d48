package sqlite

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// TestDB_LoadPlans checks that Load walks the primary key once a priority
// when the live jobs have few priorities and few finished jobs sit among
// them, reads through jobs_live otherwise, and that both give the same
// jobs in the same order.
func TestDB_LoadPlans(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		priorities, live, done int
		walks                  bool
	}{
		"OnePriority":          {1, 50, 0, true},
		"FivePriorities":       {5, 50, 0, true},
		"SixPriorities":        {6, 60, 0, false},
		"ManyFinished":         {1, 10, 60, false},
		"SomeFinished":         {2, 40, 20, true},
		"NothingLive":          {1, 0, 10, false},
		"EveryPriorityDiffers": {40, 40, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var ops []store.Op
			for n := range tc.live + tc.done {
				j := job(tc.live + tc.done - n) // inserted in reverse
				j.Priority = uint16(n % tc.priorities * 1000)
				j.Status = store.Status(n % 3)
				if n >= tc.live {
					j.Status = store.Completed
				}
				j.Budgets = []store.Binding{{Key: fmt.Sprint("k", n%4), Cost: 1}}
				ops = append(ops, store.InsertJob(j))
			}
			b.apply(t, ops...)

			tx, err := b.db.rdb.BeginTx(b.ctx, nil)
			require.NoError(t, err)
			priorities, err := loadPlan(b.ctx, tx)
			require.NoError(t, err)
			require.Equal(t, tc.walks, priorities != nil, "%v", priorities)
			byIndex := collectLive(t, tx, liveByIndex)
			require.NoError(t, tx.Rollback())

			var loaded []store.LiveJob
			require.NoError(t, b.db.Load(b.ctx, store.Loader{Job: func(j store.LiveJob) error {
				loaded = append(loaded, j)
				return nil
			}}))
			require.Len(t, loaded, tc.live)
			require.True(t, slices.IsSortedFunc(loaded, func(a, b store.LiveJob) int {
				return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.ID, b.ID))
			}))
			require.Equal(t, byIndex, loaded)
		})
	}
}

func collectLive(t *testing.T, tx *sql.Tx, query string) []store.LiveJob {
	t.Helper()
	var out []store.LiveJob
	require.NoError(t, scanLiveRows(t.Context(), tx, func(j store.LiveJob) error {
		out = append(out, j)
		return nil
	}, query))
	return out
}
