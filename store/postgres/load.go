package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/bindtext"
	"github.com/zizq/zizq/store/internal/reads"
)

// liveColumns are a store.LiveJob's columns, in the order scanLive reads.
const liveColumns = `id, queue, type, priority, status, ready_at, attempts, retry_limit, backoff_exponent,
	backoff_base_ms, backoff_jitter_ms, retention_completed_ms, retention_dead_ms, budgets, fair_tag, start_by`

// Load reads what the engine needs at start from one REPEATABLE READ
// snapshot: budgets, the start (the greatest job ID, and whether the live
// jobs are plain), live jobs in (priority, id) order, unique keys, the
// batches of the live batched jobs and the purge schedule. Rows go to l as
// they arrive. The snapshot is taken before Start is called.
func (db *DB) Load(ctx context.Context, l store.Loader) error {
	return readTx(ctx, db.pool, func(tx pgx.Tx) error {
		if err := loadBudgets(ctx, tx, l.Budget); err != nil {
			return err
		}
		if err := loadStart(ctx, tx, l.Start); err != nil {
			return err
		}
		if err := loadLive(ctx, tx, l.Job); err != nil {
			return err
		}
		if err := loadUnique(ctx, tx, l.Unique); err != nil {
			return err
		}
		if err := loadBatches(ctx, tx, l.Batch); err != nil {
			return err
		}
		return loadPurges(ctx, tx, l.Purge)
	})
}

// liveSpecial tells whether a live job has a unique key or a batch,
// through the partial indexes that hold only such jobs.
const liveSpecial = `SELECT EXISTS (SELECT 1 FROM jobs WHERE unique_key IS NOT NULL AND status <= 2),
	EXISTS (SELECT 1 FROM jobs WHERE batch_key IS NOT NULL AND status <= 2)`

func loadStart(ctx context.Context, tx pgx.Tx, fn func(store.LoadStart) error) error {
	if fn == nil {
		return nil
	}
	maxID, err := maxJobID(ctx, tx)
	if err != nil {
		return err
	}
	var unique, batched bool
	if err := tx.QueryRow(ctx, liveSpecial).Scan(&unique, &batched); err != nil {
		return fmt.Errorf("load: live unique keys and batches: %w", wrapConn(err))
	}
	return fn(store.LoadStart{MaxID: maxID, Plain: !unique && !batched})
}

func loadBudgets(ctx context.Context, tx pgx.Tx, fn func(store.Budget) error) error {
	if fn == nil {
		return nil
	}
	budgets, err := queryBudgets(ctx, tx)
	if err != nil {
		return fmt.Errorf("load budgets: %w", wrapConn(err))
	}
	for _, b := range budgets {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func loadLive(ctx context.Context, tx pgx.Tx, fn func(store.LiveJob) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT `+liveColumns+` FROM jobs WHERE status <= 2 ORDER BY priority, id`)
	if err != nil {
		return fmt.Errorf("load jobs: %w", wrapConn(err))
	}
	defer rows.Close()
	binds := bindtext.Cache{}
	names := map[string]string{} // queue and type names, shared by the jobs that have them
	for rows.Next() {
		j, err := scanLive(rows, binds, names)
		if err != nil {
			return fmt.Errorf("load jobs: %w", err)
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load jobs: %w", wrapConn(err))
	}
	return nil
}

// scanLive reads a row of liveColumns.
func scanLive(rows pgx.Rows, binds bindtext.Cache, names map[string]string) (store.LiveJob, error) {
	var (
		j                                   store.LiveJob
		queue, typ                          []byte
		priority                            int32
		status                              int16
		attempts                            int64
		retry, boBase, boJitter, retC, retD *int64
		boExp                               *float64
		budgets                             *string
		fairTag, startBy                    *int64
	)
	err := rows.Scan(&j.ID, &queue, &typ, &priority, &status, &j.ReadyAt, &attempts,
		&retry, &boExp, &boBase, &boJitter, &retC, &retD, &budgets, &fairTag, &startBy)
	if err != nil {
		return j, err
	}
	j.FairTag, j.StartBy = deref(fairTag), deref(startBy)
	j.Queue, j.Type = intern(names, queue), intern(names, typ)
	j.Priority, j.Status, j.Attempts = uint16(priority), store.Status(status), uint32(attempts)
	j.RetryLimit, j.Backoff, j.Retention = overrides(retry, boExp, boBase, boJitter, retC, retD)
	if budgets != nil {
		if j.Budgets, err = binds.Decode(*budgets); err != nil {
			return j, fmt.Errorf("job %s: %w", j.ID, err)
		}
	}
	return j, nil
}

// intern returns the one string of b's bytes: a backlog has few queue and
// type names and many jobs.
func intern(names map[string]string, b []byte) string {
	if s, ok := names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(names) < 4096 {
		names[s] = s
	}
	return s
}

// loadUnique reads the unique keys of the jobs that have one, through the
// partial index jobs_unique.
func loadUnique(ctx context.Context, tx pgx.Tx, fn func(store.UniqueJob) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id, unique_key, unique_while, status, coalesce(unique_holder, false)
		FROM jobs WHERE unique_key IS NOT NULL AND (status <= 2 OR unique_holder)`)
	if err != nil {
		return fmt.Errorf("load unique keys: %w", wrapConn(err))
	}
	defer rows.Close()
	for rows.Next() {
		var u store.UniqueJob
		var key []byte
		var while, status int16
		if err := rows.Scan(&u.ID, &key, &while, &status, &u.Holds); err != nil {
			return fmt.Errorf("load unique keys: %w", err)
		}
		u.Key, u.While, u.Status = string(key), store.UniqueWhile(while), store.Status(status)
		if err := fn(u); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load unique keys: %w", wrapConn(err))
	}
	return nil
}

// loadBatches reads the batches of the live batched jobs, by id, through
// the partial index jobs_batched.
func loadBatches(ctx context.Context, tx pgx.Tx, fn func(store.LiveBatch) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id, batch_key, batch_when, batch_fold, batch_open
		FROM jobs WHERE batch_key IS NOT NULL AND status <= 2 ORDER BY id`)
	if err != nil {
		return fmt.Errorf("load batches: %w", wrapConn(err))
	}
	defer rows.Close()
	for rows.Next() {
		var b store.LiveBatch
		var key, when, fold []byte
		if err := rows.Scan(&b.ID, &key, &when, &fold, &b.Open); err != nil {
			return fmt.Errorf("load batches: %w", err)
		}
		b.Batch = store.BatchConfig{Key: string(key), When: string(when), Fold: string(fold)}
		if err := fn(b); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load batches: %w", wrapConn(err))
	}
	return nil
}

func loadPurges(ctx context.Context, tx pgx.Tx, fn func(id string, at int64) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.Query(ctx, reads.PurgesSQL)
	if err != nil {
		return fmt.Errorf("load purge schedule: %w", wrapConn(err))
	}
	defer rows.Close()
	return reads.Purges(rows, fn, wrapConn)
}

// maxJobID returns the greatest job ID the store has ever held: the
// greater of the greatest stored ID and the high-water mark, which
// outlives deleted and purged jobs.
func maxJobID(ctx context.Context, q querier) (string, error) {
	var stored, mark *string
	err := q.QueryRow(ctx, `SELECT (SELECT max(id) FROM jobs),
		(SELECT value FROM meta WHERE key = 'id_high_water')`).Scan(&stored, &mark)
	if err != nil {
		return "", fmt.Errorf("read greatest job id: %w", wrapConn(err))
	}
	return max(deref(stored), deref(mark)), nil
}
