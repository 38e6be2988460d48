package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/zizq/zizq/store"
)

// liveColumns are the columns of a store.LiveJob, in scanLive's order.
const liveColumns = `id, queue, type, priority, status, ready_at, attempts,
	retry_limit, backoff_exponent, backoff_base_ms, backoff_jitter_ms,
	retention_completed_ms, retention_dead_ms, budgets`

// getJobsChunk bounds the IDs of one GetJobs query: a call with more
// issues one query per chunk.
const getJobsChunk = 1000

// Load reads what the engine needs at start from one read transaction (one
// snapshot of the WAL): budgets, live jobs in (priority, id) order, the
// purge schedule and the greatest job ID. Each part is one query whose rows
// go to l as they are read, so the first job arrives before the last is
// read.
func (db *DB) Load(ctx context.Context, l store.Loader) (err error) {
	tx, err := db.rdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to commit
	if err := loadBudgets(ctx, tx, l.Budget); err != nil {
		return err
	}
	if err := loadLive(ctx, tx, l.Job); err != nil {
		return err
	}
	if err := loadPurges(ctx, tx, l.Purge); err != nil {
		return err
	}
	if l.MaxID == nil {
		return nil
	}
	maxID, err := db.maxJobID(ctx, tx)
	if err != nil {
		return err
	}
	l.MaxID(maxID)
	return nil
}

func loadBudgets(ctx context.Context, tx *sql.Tx, fn func(store.Budget) error) error {
	if fn == nil {
		return nil
	}
	budgets, err := queryBudgets(ctx, tx)
	if err != nil {
		return fmt.Errorf("load budgets: %w", err)
	}
	for _, b := range budgets {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func loadLive(ctx context.Context, tx *sql.Tx, fn func(store.LiveJob) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+liveColumns+` FROM jobs WHERE status <= 2 ORDER BY priority, id`)
	if err != nil {
		return fmt.Errorf("load jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanLive(rows)
		if err != nil {
			return fmt.Errorf("load jobs: %w", err)
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load jobs: %w", err)
	}
	return nil
}

func loadPurges(ctx context.Context, tx *sql.Tx, fn func(id string, at int64) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, purge_at FROM jobs
		WHERE purge_at IS NOT NULL AND status >= 3 ORDER BY purge_at, id`)
	if err != nil {
		return fmt.Errorf("load purge schedule: %w", err)
	}
	defer rows.Close()
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
		return fmt.Errorf("load purge schedule: %w", err)
	}
	return nil
}

// maxJobID returns the greatest job ID the store has ever held: the
// greatest of the greatest stored ID, the saved high-water mark (which
// outlives deleted and purged jobs) and the mark of this process's commits
// (saved about once a second, so the stored one may lag behind it).
func (db *DB) maxJobID(ctx context.Context, tx *sql.Tx) (string, error) {
	var stored, mark sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT (SELECT max(id) FROM jobs),
		(SELECT value FROM meta WHERE key = 'id_high_water')`).Scan(&stored, &mark)
	if err != nil {
		return "", fmt.Errorf("read greatest job id: %w", err)
	}
	db.mu.Lock()
	committed := db.highWater
	db.mu.Unlock()
	return max(stored.String, mark.String, committed), nil
}

// GetJobs returns the jobs of ids, whole, in any order; IDs of no job are
// skipped. Each query looks up at most getJobsChunk IDs, each by primary
// key (the IDs drive a CROSS JOIN, as in withinQuery), so a batch of
// dispatched jobs costs one query.
func (db *DB) GetJobs(ctx context.Context, ids []string) ([]store.Job, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// Duplicates would come back twice.
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	jobs := make([]store.Job, 0, len(ids))
	for len(ids) > 0 {
		batch := ids[:min(getJobsChunk, len(ids))]
		ids = ids[len(batch):]
		arg, _ := json.Marshal(batch) // strings: cannot fail
		var err error
		jobs, err = db.queryJobs(ctx, jobs, `WITH wanted(job_id) AS (SELECT value FROM json_each(?))
			SELECT `+jobColumns+` FROM wanted CROSS JOIN jobs ON jobs.id = wanted.job_id
			LEFT JOIN job_payloads AS p ON p.id = jobs.id`, string(arg))
		if err != nil {
			return nil, fmt.Errorf("get jobs: %w", err)
		}
	}
	return jobs, nil
}

// scanLive reads a row of liveColumns.
func scanLive(s scanner) (store.LiveJob, error) {
	var (
		j                                   store.LiveJob
		priority, status, attempts          int64
		retry, boBase, boJitter, retC, retD *int64
		boExp                               *float64
		budgets                             *string
	)
	err := s.Scan(&j.ID, &j.Queue, &j.Type, &priority, &status, &j.ReadyAt, &attempts,
		&retry, &boExp, &boBase, &boJitter, &retC, &retD, &budgets)
	if err != nil {
		return store.LiveJob{}, err
	}
	j.Priority, j.Status, j.Attempts = uint16(priority), store.Status(status), uint32(attempts)
	j.RetryLimit, j.Backoff, j.Retention = overrides(retry, boExp, boBase, boJitter, retC, retD)
	if budgets != nil {
		if j.Budgets, err = decodeBindings(*budgets); err != nil {
			return store.LiveJob{}, err
		}
	}
	return j, nil
}
