package sqlite

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"strings"
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

// TestDB_LoadQueryPlans checks that Load's queries use the indexes its
// costs assume.
func TestDB_LoadQueryPlans(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		query string
		args  []any
		want  []string
	}{
		{liveByIndex, nil, []string{"SCAN jobs USING INDEX jobs_live"}},
		{liveByPriority, []any{1}, []string{"SCAN jobs"}},
		{liveCounts, nil, []string{"SCAN jobs USING COVERING INDEX jobs_queue", "SEARCH jobs USING COVERING INDEX jobs_status (status>?)"}},
		{livePriorities, []any{6}, []string{"SEARCH jobs USING INDEX jobs_live (priority>?)"}},
		{liveBatches, nil, []string{"SCAN jobs USING INDEX jobs_batched"}},
		// A dispatch's read is one search of job_payloads a job.
		{payloadsByID, []any{"[]"}, []string{"SEARCH p USING PRIMARY KEY (id=?)"}},
		{failedAtByID, []any{"[]"}, []string{"SEARCH jobs USING PRIMARY KEY (id=?)"}},
	} {
		plan := queryPlan(t, b, tc.query, tc.args...)
		for _, step := range tc.want {
			require.Contains(t, plan, step, "%.40s", tc.query)
		}
	}
}

// queryPlan is SQLite's EXPLAIN QUERY PLAN of query, one step a line.
func queryPlan(t *testing.T, b *testBundle, query string, args ...any) string {
	t.Helper()
	rows, err := b.db.rdb.QueryContext(b.ctx, "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}
