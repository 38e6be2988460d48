// Package reads holds the parts of reads that both stores do alike, over
// the rows of either driver (database/sql's and pgx's both satisfy Rows).
package reads

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zizq/zizq/store"
)

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

// MatchChunk is how many rows a page of a filter with Match reads per
// query: Match is tested in Go, so most rows read may not match.
const MatchChunk = 256

// ListJobs is a store's ListJobs around its scan, which calls fn with each
// job matching f in order until fn returns false, reading chunk rows per
// query: limit+1 rows (to learn whether more follow), or MatchChunk when
// Match filters rows in Go.
func ListJobs(f store.Filter, limit int, scan func(chunk int, fn func(store.Job) bool) error) ([]store.Job, bool, error) {
	if limit <= 0 {
		return nil, false, errors.New("list jobs: limit must be positive")
	}
	chunk := limit + 1
	if f.Match != nil {
		chunk = max(chunk, MatchChunk)
	}
	jobs, more, err := Page(limit, func(fn func(store.Job) bool) error { return scan(chunk, fn) })
	if err != nil {
		return nil, false, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, more, nil
}

// PurgesSQL reads the purge schedule (completed and dead jobs whose
// purge_at is set) by (purge_at, id), in the columns Purges scans; the same
// SQL on both stores.
const PurgesSQL = `SELECT id, purge_at FROM jobs
		WHERE purge_at IS NOT NULL AND status >= 3 ORDER BY purge_at, id`

// Purges calls fn with each row of PurgesSQL and returns the first error fn
// returns, as it is. The rows' own errors go through wrap (the driver's
// mapping; nil: none) and say what failed.
func Purges(rows Rows, fn func(id string, at int64) error, wrap func(error) error) error {
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			return fmt.Errorf("load purge schedule: %w", err)
		}
		if err := fn(id, at); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		if wrap != nil {
			err = wrap(err)
		}
		return fmt.Errorf("load purge schedule: %w", err)
	}
	return nil
}

// Chunk reads up to chunk jobs matching a filter's SQL conditions (Match
// aside), in order, after the exclusive cursor ("": from the start),
// appending them to buf: one query of a store's dialect.
type Chunk func(buf []store.Job, cursor string) ([]store.Job, error)

// Scan calls fn with every job matching f (Match included) that read
// returns, chunk by chunk, until fn returns false or a chunk comes back
// short. Each chunk's query ends before fn sees its jobs, so a scan holds
// no connection while fn runs.
func Scan(f store.Filter, from string, chunk int, read Chunk, fn func(store.Job) bool) error {
	cursor := from
	buf := make([]store.Job, 0, min(chunk, 1024))
	for {
		var err error
		if buf, err = read(buf[:0], cursor); err != nil {
			return err
		}
		if !deliver(f, buf, fn) {
			return nil
		}
		if len(buf) < chunk {
			return nil
		}
		cursor = buf[len(buf)-1].ID
	}
}

// Lookup reads the jobs of batch (IDs of a Within set) that a filter's SQL
// conditions select, appending them to buf in any order: one query of a
// store's dialect.
type Lookup func(buf []store.Job, batch []string) ([]store.Job, error)

// ScanWithin is Scan for a filter with a Within set: it looks the set's
// IDs after from up, chunk at a time, so that the work follows the size of
// the set however many rows the table holds.
func ScanWithin(f store.Filter, from string, order store.Order, chunk int, lookup Lookup, fn func(store.Job) bool) error {
	ids := f.Within.After(from, order)
	buf := make([]store.Job, 0, min(chunk, len(ids)))
	for len(ids) > 0 {
		batch := ids[:min(chunk, len(ids))]
		ids = ids[len(batch):]
		var err error
		if buf, err = lookup(buf[:0], batch); err != nil {
			return err
		}
		// The batch is in order; the rows come back in any.
		slices.SortFunc(buf, func(a, b store.Job) int {
			if order == store.Desc {
				return strings.Compare(b.ID, a.ID)
			}
			return strings.Compare(a.ID, b.ID)
		})
		if !deliver(f, buf, fn) {
			return nil
		}
	}
	return nil
}

// deliver calls fn with each job of jobs that f's Match accepts; false
// when fn asked to stop.
func deliver(f store.Filter, jobs []store.Job, fn func(store.Job) bool) bool {
	for _, j := range jobs {
		if f.Match != nil && !f.Match(j.Payload) {
			continue
		}
		if !fn(j) {
			return false
		}
	}
	return true
}
