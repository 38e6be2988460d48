package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/bindtext"
	"github.com/zizq/zizq/store/internal/chunk"
	"github.com/zizq/zizq/store/internal/reads"
)

const (
	// idChunk is how many IDs one query looks up (GetJobs, Within sets).
	idChunk = 1000
)

// jobColumns are the columns of a whole job, in the order scanJob reads.
const jobColumns = `id, queue, type, priority, status, payload, ready_at, attempts,
	retry_limit, backoff_exponent, backoff_base_ms, backoff_jitter_ms,
	retention_completed_ms, retention_dead_ms,
	dequeued_at, failed_at, completed_at, purge_at, budgets, unique_key, unique_while,
	batch_key, batch_when, batch_fold, batch_open, fair_tag, start_by`

// querier is the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readTx runs fn in a read-only REPEATABLE READ transaction: one snapshot.
func readTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return wrapConn(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }() // read-only: nothing to commit
	return fn(tx)
}

// GetJob returns the job with the given ID, or ErrNotFound if there is none
// or its purge_at is set and not after now.
func (db *DB) GetJob(ctx context.Context, id string, now int64) (store.Job, error) {
	j, err := scanJob(db.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) || err == nil && purged(j.PurgeAt, now) {
		return store.Job{}, store.ErrNotFound
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("get job %s: %w", id, wrapConn(err))
	}
	return j, nil
}

func purged(purgeAt, now int64) bool { return now != 0 && purgeAt != 0 && purgeAt <= now }

// GetJobs returns the jobs of ids, whole, in any order; IDs of no job are
// skipped. One query per 1000 IDs.
func (db *DB) GetJobs(ctx context.Context, ids []string) ([]store.Job, error) {
	jobs, err := chunk.ByID(ids, idChunk, func(out []store.Job, batch []string) ([]store.Job, error) {
		return queryJobs(ctx, db.pool, out, `SELECT `+jobColumns+` FROM jobs WHERE id = ANY($1)`, batch)
	})
	if err != nil {
		return nil, fmt.Errorf("get jobs: %w", err)
	}
	return jobs, nil
}

// Payloads returns the payload and failed_at of the jobs of ids, in any
// order; IDs of no job are skipped. One query per 1000 IDs.
func (db *DB) Payloads(ctx context.Context, ids []string) ([]store.JobPayload, error) {
	out, err := chunk.ByID(ids, idChunk, func(out []store.JobPayload, batch []string) ([]store.JobPayload, error) {
		return queryPayloads(ctx, db.pool, out, batch)
	})
	if err != nil {
		return nil, fmt.Errorf("read payloads: %w", err)
	}
	return out, nil
}

func queryPayloads(ctx context.Context, q querier, out []store.JobPayload, ids []string) ([]store.JobPayload, error) {
	rows, err := q.Query(ctx, `SELECT id, failed_at, payload FROM jobs WHERE id = ANY($1)`, ids)
	if err != nil {
		return out, wrapConn(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p store.JobPayload
		if err := rows.Scan(&p.ID, &p.FailedAt, &p.Payload); err != nil {
			return out, err
		}
		if len(p.Payload) == 0 {
			p.Payload = nil
		}
		out = append(out, p)
	}
	return out, wrapConn(rows.Err())
}

// ListJobs returns up to limit jobs matching f, by ID in order, after the
// exclusive cursor from. more reports whether at least one more matching
// job follows the page.
func (db *DB) ListJobs(ctx context.Context, f store.Filter, from string, order store.Order, limit int) ([]store.Job, bool, error) {
	return reads.ListJobs(f, limit, func(chunk int, fn func(store.Job) bool) error {
		return db.scanJobs(ctx, f, from, order, chunk, fn)
	})
}

// scanJobs calls fn with every job matching f (Match included) in ID order
// after from, until fn returns false, reading chunk rows per query.
func (db *DB) scanJobs(ctx context.Context, f store.Filter, from string, order store.Order, chunk int, fn func(store.Job) bool) error {
	if f.Within != nil {
		return db.scanWithin(ctx, f, from, order, chunk, fn)
	}
	cmp, dir := ">", "ASC"
	if order == store.Desc {
		cmp, dir = "<", "DESC"
	}
	return reads.Scan(f, from, chunk, func(buf []store.Job, cursor string) ([]store.Job, error) {
		c := conditions(&f)
		if cursor != "" {
			c.add("id "+cmp+" $", cursor)
		}
		query := `SELECT ` + jobColumns + ` FROM jobs WHERE ` + c.where() +
			` ORDER BY id ` + dir + ` LIMIT ` + strconv.Itoa(chunk)
		return queryJobs(ctx, db.pool, buf, query, c.args...)
	}, fn)
}

// scanWithin is scanJobs for a filter with a Within set: it looks the
// set's IDs after from up by primary key, chunk at a time.
func (db *DB) scanWithin(ctx context.Context, f store.Filter, from string, order store.Order, chunk int, fn func(store.Job) bool) error {
	return reads.ScanWithin(f, from, order, chunk, func(buf []store.Job, batch []string) ([]store.Job, error) {
		c := conditions(&f)
		c.add("id = ANY($)", batch)
		return queryJobs(ctx, db.pool, buf, `SELECT `+jobColumns+` FROM jobs WHERE `+c.where(), c.args...)
	}, fn)
}

// queryJobs appends the jobs a query returns to buf.
func queryJobs(ctx context.Context, q querier, buf []store.Job, query string, args ...any) ([]store.Job, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return buf, wrapConn(err)
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return buf, err
		}
		buf = append(buf, j)
	}
	return buf, wrapConn(rows.Err())
}

// CountJobs returns how many jobs match f.
func (db *DB) CountJobs(ctx context.Context, f store.Filter) (int64, error) {
	var n int64
	switch {
	case f.Match != nil:
		err := db.scanJobs(ctx, f, "", store.Asc, reads.MatchChunk, func(store.Job) bool { n++; return true })
		if err != nil {
			return 0, fmt.Errorf("count jobs: %w", err)
		}
	case f.Within != nil:
		err := idBatches(f.Within, func(batch []string) error {
			c := conditions(&f)
			c.add("id = ANY($)", batch)
			var k int64
			err := db.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE `+c.where(), c.args...).Scan(&k)
			n += k
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("count jobs: %w", wrapConn(err))
		}
	default:
		c := conditions(&f)
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE `+c.where(), c.args...).Scan(&n); err != nil {
			return 0, fmt.Errorf("count jobs: %w", wrapConn(err))
		}
	}
	return n, nil
}

// JobIDs returns the ID of every job matching f, ascending.
func (db *DB) JobIDs(ctx context.Context, f store.Filter) ([]string, error) {
	var ids []string
	switch {
	case f.Match != nil:
		err := db.scanJobs(ctx, f, "", store.Asc, reads.MatchChunk, func(j store.Job) bool {
			ids = append(ids, j.ID)
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("list job ids: %w", err)
		}
	case f.Within != nil:
		err := idBatches(f.Within, func(batch []string) error {
			c := conditions(&f)
			c.add("id = ANY($)", batch)
			var err error
			ids, err = queryIDs(ctx, db.pool, ids, `SELECT id FROM jobs WHERE `+c.where()+` ORDER BY id`, c.args...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list job ids: %w", err)
		}
	default:
		c := conditions(&f)
		var err error
		if ids, err = queryIDs(ctx, db.pool, ids, `SELECT id FROM jobs WHERE `+c.where()+` ORDER BY id`, c.args...); err != nil {
			return nil, fmt.Errorf("list job ids: %w", err)
		}
	}
	return ids, nil
}

func queryIDs(ctx context.Context, q querier, ids []string, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return ids, wrapConn(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, wrapConn(rows.Err())
}

// idBatches calls fn with the IDs of s in order, idChunk at a time.
func idBatches(s *store.IDSet, fn func(batch []string) error) error {
	for ids := s.IDs(); len(ids) > 0; {
		batch := ids[:min(idChunk, len(ids))]
		ids = ids[len(batch):]
		if err := fn(batch); err != nil {
			return err
		}
	}
	return nil
}

// Queues returns the distinct queue names of all stored jobs, by byte
// order.
func (db *DB) Queues(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT DISTINCT queue FROM jobs ORDER BY queue`)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", wrapConn(err))
	}
	queues, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var b []byte
		err := r.Scan(&b)
		return string(b), err
	})
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", wrapConn(err))
	}
	return queues, nil
}

const errorColumns = `job_id, attempt, message, error_type, backtrace, dequeued_at, failed_at`

// ListErrors returns up to limit error records of a job by attempt in
// order, after the exclusive cursor from (0 = from the start).
func (db *DB) ListErrors(ctx context.Context, jobID string, from uint32, order store.Order, limit int) ([]store.ErrorRecord, bool, error) {
	if limit <= 0 {
		return nil, false, errors.New("list errors: limit must be positive")
	}
	cmp, dir := ">", "ASC"
	if order == store.Desc {
		cmp, dir = "<", "DESC"
	}
	q := `SELECT ` + errorColumns + ` FROM job_errors WHERE job_id = $1`
	args := []any{jobID}
	if from != 0 {
		q += ` AND attempt ` + cmp + ` $2`
		args = append(args, int64(from))
	}
	q += ` ORDER BY attempt ` + dir + ` LIMIT ` + strconv.Itoa(limit+1)
	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list errors: %w", wrapConn(err))
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ErrorRecord, error) { return scanError(r) })
	if err != nil {
		return nil, false, fmt.Errorf("list errors: %w", wrapConn(err))
	}
	more := false
	if len(recs) > limit {
		recs, more = recs[:limit], true
	}
	return recs, more, nil
}

// GetError returns one error record, or ErrNotFound.
func (db *DB) GetError(ctx context.Context, jobID string, attempt uint32) (store.ErrorRecord, error) {
	r, err := scanError(db.pool.QueryRow(ctx, `SELECT `+errorColumns+` FROM job_errors
		WHERE job_id = $1 AND attempt = $2`, jobID, int64(attempt)))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrorRecord{}, store.ErrNotFound
	}
	if err != nil {
		return store.ErrorRecord{}, fmt.Errorf("get error record: %w", wrapConn(err))
	}
	return r, nil
}

// Budgets returns every budget configuration, sorted by key.
func (db *DB) Budgets(ctx context.Context) ([]store.Budget, error) {
	out, err := queryBudgets(ctx, db.pool)
	if err != nil {
		return nil, fmt.Errorf("list budgets: %w", wrapConn(err))
	}
	return out, nil
}

func queryBudgets(ctx context.Context, q querier) ([]store.Budget, error) {
	rows, err := q.Query(ctx, `SELECT key, allocation, strategy, duration_ms, burst, created_at, updated_at,
			per_key_allocation, per_key_strategy, per_key_duration_ms, per_key_burst, paused, paused_until,
			sub_pauses, reset, timezone, spent_ends_at, spent_used, key_overrides, adaptive
		FROM budgets ORDER BY key`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanBudget)
}

// scanBudget reads a row of queryBudgets; NULL template columns (a plain
// budget, or a row older than families) read as no template, NULL spent
// columns (nothing spent yet) as no Spent.
func scanBudget(r pgx.CollectableRow) (store.Budget, error) {
	var (
		b                    store.Budget
		key                  []byte
		tAlloc, tDur, tBurst *int64
		tStrategy            *string
		pausedUntil          *int64
		subPauses            *string
		reset, timezone      *string
		endsAt, used         *int64
		keys, adaptive       *string
	)
	err := r.Scan(&key, &b.Allocation, &b.Strategy, &b.DurationMs, &b.Burst, &b.CreatedAt, &b.UpdatedAt,
		&tAlloc, &tStrategy, &tDur, &tBurst, &b.Paused, &pausedUntil, &subPauses,
		&reset, &timezone, &endsAt, &used, &keys, &adaptive)
	if err != nil {
		return store.Budget{}, err
	}
	if b.SubPauses, err = store.DecodeSubPauses(subPauses); err != nil {
		return store.Budget{}, err
	}
	if b.Keys, err = store.DecodeKeys(keys); err != nil {
		return store.Budget{}, err
	}
	if b.Adaptive, err = store.DecodeAdaptive(adaptive); err != nil {
		return store.Budget{}, err
	}
	b.Key = string(key)
	if tAlloc != nil && tStrategy != nil {
		b.PerKey = &store.BudgetTemplate{Allocation: *tAlloc, Strategy: *tStrategy,
			DurationMs: deref(tDur), Burst: deref(tBurst)}
	}
	b.PausedUntil = deref(pausedUntil)
	b.Reset, b.Timezone = deref(reset), deref(timezone)
	if endsAt != nil && used != nil {
		b.Spent = &store.Spent{EndsAt: *endsAt, Used: *used}
	}
	return b, nil
}

// scanJob reads a row of jobColumns.
func scanJob(s pgx.Row) (store.Job, error) {
	var (
		j                                   store.Job
		queue, typ, key                     []byte
		priority                            int32
		status                              int16
		attempts                            int64
		retry, boBase, boJitter, retC, retD *int64
		purge                               *int64
		boExp                               *float64
		budgets                             *string
		while                               *int16
		batchKey, when, fold                []byte
		fairTag, startBy                    *int64
	)
	err := s.Scan(&j.ID, &queue, &typ, &priority, &status, &j.Payload, &j.ReadyAt, &attempts,
		&retry, &boExp, &boBase, &boJitter, &retC, &retD,
		&j.DequeuedAt, &j.FailedAt, &j.CompletedAt, &purge, &budgets, &key, &while,
		&batchKey, &when, &fold, &j.BatchOpen, &fairTag, &startBy)
	if err != nil {
		return store.Job{}, err
	}
	j.FairTag, j.StartBy = deref(fairTag), deref(startBy)
	if batchKey != nil {
		j.Batch = &store.BatchConfig{Key: string(batchKey), When: string(when), Fold: string(fold)}
	}
	j.Queue, j.Type = string(queue), string(typ)
	j.Priority, j.Status, j.Attempts = uint16(priority), store.Status(status), uint32(attempts)
	j.RetryLimit, j.Backoff, j.Retention = overrides(retry, boExp, boBase, boJitter, retC, retD)
	if purge != nil {
		j.PurgeAt = *purge
	}
	if key != nil {
		j.UniqueKey = string(key)
		if while != nil {
			j.UniqueWhile = store.UniqueWhile(*while)
		}
	}
	if budgets != nil {
		if j.Budgets, err = bindtext.Decode(*budgets); err != nil {
			return store.Job{}, err
		}
	}
	if len(j.Payload) == 0 {
		j.Payload = nil
	}
	return j, nil
}

// overrides builds a job's overrides from their columns (nil: NULL).
func overrides(retry *int64, boExp *float64, boBase, boJitter, retC, retD *int64) (*uint32, *store.Backoff, *store.Retention) {
	var limit *uint32
	var bo *store.Backoff
	var ret *store.Retention
	if retry != nil {
		limit = ptr(uint32(*retry))
	}
	if boExp != nil || boBase != nil || boJitter != nil {
		bo = &store.Backoff{Exponent: float32(deref(boExp)), BaseMs: uint32(deref(boBase)), JitterMs: uint32(deref(boJitter))}
	}
	if retC != nil || retD != nil {
		ret = &store.Retention{}
		if retC != nil {
			ret.CompletedMs = ptr(uint64(*retC))
		}
		if retD != nil {
			ret.DeadMs = ptr(uint64(*retD))
		}
	}
	return limit, bo, ret
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// scanError reads a row of errorColumns.
func scanError(s pgx.Row) (store.ErrorRecord, error) {
	var r store.ErrorRecord
	var attempt int64
	var msg, typ, trace []byte
	err := s.Scan(&r.JobID, &attempt, &msg, &typ, &trace, &r.DequeuedAt, &r.FailedAt)
	r.Attempt, r.Message, r.ErrorType, r.Backtrace = uint32(attempt), string(msg), string(typ), string(trace)
	return r, err
}

// conds is a WHERE clause being built: each condition's "$" is replaced by
// its argument's number.
type conds struct {
	parts []string
	args  []any
}

func (c *conds) add(cond string, arg ...any) {
	for _, a := range arg {
		c.args = append(c.args, a)
		cond = strings.Replace(cond, "$", "\x00"+strconv.Itoa(len(c.args)), 1)
	}
	c.parts = append(c.parts, strings.ReplaceAll(cond, "\x00", "$"))
}

func (c *conds) where() string {
	if len(c.parts) == 0 {
		return "true"
	}
	return strings.Join(c.parts, " AND ")
}

// conditions renders the SQL conditions of f (all but Match and Within).
func conditions(f *store.Filter) *conds {
	c := &conds{}
	if len(f.IDs) > 0 {
		c.add("id = ANY($)", f.IDs)
	}
	if len(f.Queues) > 0 {
		c.add("queue = ANY($)", byteSlices(f.Queues))
	}
	if len(f.Types) > 0 {
		c.add("type = ANY($)", byteSlices(f.Types))
	}
	if len(f.Statuses) > 0 {
		st := make([]int16, len(f.Statuses))
		for i, s := range f.Statuses {
			st[i] = int16(s)
		}
		c.add("status = ANY($)", st)
	}
	if len(f.BudgetKeys) > 0 {
		cond, args := budgetKeyCond(f)
		c.add(`budgets IS NOT NULL AND EXISTS (SELECT 1 FROM json_array_elements(budgets::json) AS b
			WHERE `+cond+`)`, args...)
	}
	for _, r := range []struct {
		col string
		r   *store.Range
	}{{"priority", f.Priority}, {"ready_at", f.ReadyAt}, {"attempts", f.Attempts}} {
		if r.r == nil {
			continue
		}
		// Stored values fit in int64: a bound beyond it either excludes
		// everything (Lo) or nothing (Hi).
		if lo := r.r.Lo; lo != nil {
			if *lo > math.MaxInt64 {
				c.add("false")
			} else {
				c.add(r.col+" >= $", int64(*lo))
			}
		}
		if hi := r.r.Hi; hi != nil && *hi <= math.MaxInt64 {
			c.add(r.col+" <= $", int64(*hi))
		}
	}
	if f.Now != 0 {
		c.add("(purge_at IS NULL OR purge_at > $)", f.Now)
	}
	return c
}

// budgetKeyCond renders the condition on one binding (b) of Filter's
// budget keys: one of BudgetKeys, or under one of SubBudgetsOf but not
// one of NotSubBudgets nor under one. starts_with tests a prefix without
// LIKE's wildcards, which keys may hold.
func budgetKeyCond(f *store.Filter) (string, []any) {
	cond, args := `b->>'key' = ANY($)`, []any{f.BudgetKeys}
	if len(f.SubBudgetsOf) == 0 {
		return cond, args
	}
	under := func(keys []string) string {
		prefixes := make([]string, len(keys))
		for i, k := range keys {
			prefixes[i] = k + "/"
		}
		args = append(args, prefixes)
		return `EXISTS (SELECT 1 FROM unnest($::text[]) AS p WHERE starts_with(b->>'key', p))`
	}
	cond += ` OR (` + under(f.SubBudgetsOf)
	if len(f.NotSubBudgets) > 0 {
		args = append(args, f.NotSubBudgets)
		cond += ` AND NOT (b->>'key' = ANY($) OR ` + under(f.NotSubBudgets) + `)`
	}
	return `(` + cond + `))`, args
}

func byteSlices(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
