package sqlite

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store"
)

// TestDB_LoadPlans checks that Load walks the primary key once a priority
// when the live jobs have few priorities and few finished jobs sit among
// them, reads the priorities other than commonPriority through jobs_live
// otherwise, and that either way it gives the jobs a plain sort gives, in
// the same order.
func TestDB_LoadPlans(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		priorities []uint16
		live, done int
		walks      bool
	}{
		"Common":         {[]uint16{commonPriority}, 50, 0, true},
		"OnePriority":    {[]uint16{7}, 50, 0, true},
		"FourPriorities": {[]uint16{0, 1000, 2000, 3000}, 40, 0, true},
		// Five others and the walk of commonPriority, which may hold jobs
		// no index shows: past the break-even.
		"FivePriorities":   {[]uint16{0, 1000, 2000, 3000, 4000}, 50, 0, false},
		"FiveAroundCommon": {[]uint16{0, 1000, commonPriority, 40000, 65535}, 50, 0, true},
		"SixPriorities":    {[]uint16{0, 1000, 2000, 3000, 4000, 5000}, 60, 0, false},
		"SixAroundCommon":  {[]uint16{0, 1000, 2000, commonPriority, 40000, 65535}, 60, 0, false},
		// Only commonPriority: its walk is the plan, weighed or not.
		"ManyFinished":         {[]uint16{commonPriority}, 10, 60, true},
		"ManyFinishedOther":    {[]uint16{3}, 10, 60, false},
		"SomeFinished":         {[]uint16{0, commonPriority}, 40, 20, true},
		"NothingLive":          {[]uint16{commonPriority}, 0, 10, true},
		"NothingLiveOther":     {[]uint16{9}, 0, 10, true},
		"EveryPriorityDiffers": {spread(40), 40, 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var ops []store.Op
			for n := range tc.live + tc.done {
				j := job(tc.live + tc.done - n) // inserted in reverse
				j.Priority = tc.priorities[n%len(tc.priorities)]
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
			reads, err := loadPlan(b.ctx, tx)
			require.NoError(t, err)
			walks := len(reads) > 0
			for _, r := range reads {
				walks = walks && r.query == liveByPriority
			}
			require.Equal(t, tc.walks, walks, "%v", reads)
			sorted := collectLive(t, tx, liveSorted)
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
			require.Equal(t, sorted, loaded)
		})
	}
}

// liveSorted is the oracle of TestDB_LoadPlans: the live jobs as SQLite
// sorts them, no index used.
const liveSorted = `SELECT ` + liveColumns + ` FROM jobs NOT INDEXED WHERE status <= 2 ORDER BY priority, id`

// spread returns n distinct priorities, commonPriority among them.
func spread(n int) []uint16 {
	ps := []uint16{commonPriority}
	for i := 1; i < n; i++ {
		ps = append(ps, uint16(i*1000))
	}
	return ps
}

// TestDB_CommonPriorityIndex checks that commonPriority is the API's
// default priority and the one priority jobs_live leaves out.
func TestDB_CommonPriorityIndex(t *testing.T) {
	t.Parallel()
	require.Equal(t, api.DefaultPriority, commonPriority)
	require.Equal(t, strconv.Itoa(commonPriority), commonPriorityText)
	b := setup(t)
	var def string
	require.NoError(t, b.db.rdb.QueryRowContext(b.ctx,
		`SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = 'jobs_live'`).Scan(&def))
	require.Contains(t, def, "WHERE "+inLiveIndex, "the condition the load queries state")
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
		{liveBelow, nil, []string{"SEARCH jobs USING INDEX jobs_live (priority<?)"}},
		{liveAbove, nil, []string{"SEARCH jobs USING INDEX jobs_live (priority>?)"}},
		{liveByPriority, []any{1}, []string{"SCAN jobs"}},
		{liveCounts, nil, []string{"SCAN jobs\n", "SEARCH jobs USING COVERING INDEX jobs_status (status>?)"}},
		{otherPriorities, []any{6}, []string{"SEARCH jobs USING INDEX jobs_live (priority>?)"}},
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
