package sqlite

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// TestDB_WithinSet checks that a Within set is looked up by primary key,
// a batch at a time: the plan never walks the table or an index, whatever
// else the filter asks, and sets larger than a batch count and list whole.
func TestDB_WithinSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ops []store.Op
	for n := range 50 {
		j := job(n)
		if n%2 == 1 {
			j.Status, j.Queue = store.Completed, "done"
		}
		ops = append(ops, store.InsertJob(j))
	}
	b.apply(t, ops...)

	t.Run("PrimaryKeyLookups", func(t *testing.T) {
		t.Parallel()
		for name, f := range map[string]store.Filter{
			"Alone":      {},
			"Queues":     {Queues: []string{"default"}},
			"Statuses":   {Statuses: []store.Status{store.Completed}},
			"Everything": {Queues: []string{"done"}, Statuses: []store.Status{store.Ready, store.Completed}, BudgetKeys: []string{"k"}, Priority: &store.Range{}, Now: 1},
		} {
			for _, cols := range []string{jobColumns, "count(*)", "jobs.id"} {
				query, args := withinQuery(cols, &f, []string{id(1), id(2)}, cols == jobColumns)
				rows, err := b.db.rdb.QueryContext(b.ctx, "EXPLAIN QUERY PLAN "+query, args...)
				require.NoError(t, err)
				var plan []string
				for rows.Next() {
					var id, parent, unused int
					var detail string
					require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
					plan = append(plan, detail)
				}
				require.NoError(t, rows.Err())
				require.NoError(t, rows.Close())
				// The IDs are the outer loop; each finds its row by id
				// (the primary key, or an index that ends in id).
				require.True(t, strings.HasPrefix(plan[0], "SCAN json_each"), "%s, %.8s: %q", name, cols, plan)
				lookups := 0
				for _, step := range plan {
					if strings.Contains(step, " jobs ") {
						require.Regexp(t, `^SEARCH jobs USING .*\bid=\?\)$`, step, "%s, %.8s: %q", name, cols, plan)
						lookups++
					}
				}
				require.Equal(t, 1, lookups, "%s, %.8s: %q", name, cols, plan)
			}
		}
	})

	t.Run("LargerThanABatch", func(t *testing.T) {
		t.Parallel()
		// 2.5 batches of IDs, most of no job; the jobs are in every batch.
		var set, want []string
		for n := range 5 * withinChunk / 2 {
			set = append(set, id(n*7%(5*withinChunk/2)))
		}
		for n := 0; n < 50; n += 2 {
			want = append(want, id(n))
		}
		f := store.Filter{Within: store.NewIDSet(set), Statuses: []store.Status{store.Ready}}
		n, err := b.db.CountJobs(b.ctx, f)
		require.NoError(t, err)
		require.EqualValues(t, len(want), n)
		got, err := b.db.JobIDs(b.ctx, f)
		require.NoError(t, err)
		require.Equal(t, want, got)
		jobs, more, err := b.db.ListJobs(b.ctx, f, "", store.Desc, 2000)
		require.NoError(t, err)
		require.False(t, more)
		require.Equal(t, reversed(want), jobIDs(jobs))
	})
}

func jobIDs(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
