// Package reads holds the parts of reads that both stores do alike, over
// the rows of either driver (database/sql's and pgx's both satisfy Rows).
package reads

import "github.com/zizq/zizq/store"

// Rows are a query's result rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// CronEntriesSQL reads every cron entry by group and name, in the columns
// CronEntries scans; the same SQL on both stores.
const CronEntriesSQL = `SELECT group_name, name, expression, coalesce(timezone, ''), paused,
		coalesce(paused_at, 0), coalesce(resumed_at, 0), job,
		coalesce(next_enqueue_at, 0), coalesce(last_enqueue_at, 0)
		FROM cron_entries ORDER BY group_name, name`

// CronEntries reads the rows of CronEntriesSQL into their groups (sorted
// by name); entries of no group are skipped.
func CronEntries(rows Rows, groups []store.CronGroup) error {
	gi := 0
	for rows.Next() {
		var e store.CronEntry
		if err := rows.Scan(&e.Group, &e.Name, &e.Expression, &e.Timezone, &e.Paused,
			&e.PausedAt, &e.ResumedAt, &e.Job, &e.NextEnqueueAt, &e.LastEnqueueAt); err != nil {
			return err
		}
		for gi < len(groups) && groups[gi].Name < e.Group {
			gi++
		}
		if gi < len(groups) && groups[gi].Name == e.Group {
			groups[gi].Entries = append(groups[gi].Entries, e)
		}
	}
	return rows.Err()
}

// Page collects up to limit jobs from scan, which calls its function with
// each matching job in order until it returns false; more reports whether
// at least one more followed. limit must be positive.
func Page(limit int, scan func(func(store.Job) bool) error) (jobs []store.Job, more bool, err error) {
	err = scan(func(j store.Job) bool {
		if len(jobs) == limit {
			more = true
			return false
		}
		jobs = append(jobs, j)
		return true
	})
	if err != nil {
		return nil, false, err
	}
	return jobs, more, nil
}
