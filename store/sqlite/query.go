package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/bindtext"
	"github.com/zizq/zizq/store/internal/reads"
)

const (
	// inlineListMax is the longest filter list bound as one placeholder per
	// value; longer lists go as one JSON array (SQLite limits placeholders).
	inlineListMax = 64
	// withinChunk is how many IDs of a Filter.Within set a count or an ID
	// listing looks up per query.
	withinChunk = 1000
)

// readStmts are the read pool's prepared statements for the hot lookups.
type readStmts struct {
	getJob, getError *sql.Stmt
}

func (r *readStmts) prepare(ctx context.Context, rdb *sql.DB) error {
	var err error
	if r.getJob, err = rdb.PrepareContext(ctx, `SELECT `+jobColumns+` FROM `+jobsWithPayload+` WHERE jobs.id = ?`); err != nil {
		return fmt.Errorf("prepare job lookup: %w", err)
	}
	r.getError, err = rdb.PrepareContext(ctx, `SELECT `+errorColumns+` FROM job_errors
		WHERE job_id = ? AND attempt = ?`)
	if err != nil {
		return fmt.Errorf("prepare error lookup: %w", err)
	}
	return nil
}

func (r *readStmts) close() {
	for _, s := range []*sql.Stmt{r.getJob, r.getError} {
		if s != nil {
			_ = s.Close()
		}
	}
}

// GetJob returns the job with the given ID, or ErrNotFound if there is none
// or its purge_at is set and not after now.
func (db *DB) GetJob(ctx context.Context, id string, now int64) (store.Job, error) {
	j, err := scanJob(db.read.getJob.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) || err == nil && purged(j.PurgeAt, now) {
		return store.Job{}, store.ErrNotFound
	}
	if err != nil {
		return store.Job{}, fmt.Errorf("get job %s: %w", id, err)
	}
	return j, nil
}

// purged reports whether a job with purgeAt is invisible at now.
func purged(purgeAt, now int64) bool { return now != 0 && purgeAt != 0 && purgeAt <= now }

// ListJobs returns up to limit jobs matching f, by ID in order, after the
// exclusive cursor from ("" = from the start). more reports whether at least
// one more matching job follows the page.
func (db *DB) ListJobs(ctx context.Context, f store.Filter, from string, order store.Order, limit int) ([]store.Job, bool, error) {
	return reads.ListJobs(f, limit, func(chunk int, fn func(store.Job) bool) error {
		return db.scanJobs(ctx, f, from, order, chunk, fn)
	})
}

// scanJobs calls fn with every job matching f (Match included) in ID order
// after from, until fn returns false. It reads chunk rows per query and
// holds no connection while fn runs.
func (db *DB) scanJobs(ctx context.Context, f store.Filter, from string, order store.Order, chunk int, fn func(store.Job) bool) error {
	if f.Within != nil {
		return db.scanWithin(ctx, f, from, order, chunk, fn)
	}
	where, args := conditions(&f)
	cmp, dir := ">", "ASC"
	if order == store.Desc {
		cmp, dir = "<", "DESC"
	}
	q := `SELECT ` + jobColumns + ` FROM ` + jobsWithPayload + ` WHERE ` + where
	return reads.Scan(f, from, chunk, func(buf []store.Job, cursor string) ([]store.Job, error) {
		query, qargs := q, args
		if cursor != "" {
			query += ` AND jobs.id ` + cmp + ` ?`
			qargs = append(qargs[:len(qargs):len(qargs)], cursor)
		}
		query += ` ORDER BY jobs.id ` + dir + ` LIMIT ?`
		qargs = append(qargs[:len(qargs):len(qargs)], chunk)
		return db.queryJobs(ctx, buf, query, qargs...)
	}, fn)
}

// scanWithin is scanJobs for a filter with a Within set: it looks up the
// set's IDs after from, chunk at a time, so that the work follows the size
// of the set however many rows the table holds.
func (db *DB) scanWithin(ctx context.Context, f store.Filter, from string, order store.Order, chunk int, fn func(store.Job) bool) error {
	return reads.ScanWithin(f, from, order, chunk, func(buf []store.Job, batch []string) ([]store.Job, error) {
		query, args := withinQuery(jobColumns, &f, batch, true)
		return db.queryJobs(ctx, buf, query, args...)
	}, fn)
}

// withinQuery selects cols of the jobs of batch (IDs of a Within set) that
// f's conditions select. The IDs drive the join, CROSS JOIN keeping them
// the outer loop, so each is one lookup by id (the primary key, or an
// index that ends in id) whatever else f asks for: the planner never walks
// the table or a range of an index for them (TestDB_WithinSet). With
// payload, each job is joined to its payload, for jobColumns.
func withinQuery(cols string, f *store.Filter, batch []string, payload bool) (string, []any) {
	where, args := conditions(f)
	ids, _ := json.Marshal(batch) // strings: cannot fail
	query := `WITH within(job_id) AS (SELECT value FROM json_each(?))
		SELECT ` + cols + ` FROM within CROSS JOIN jobs ON jobs.id = within.job_id`
	if payload {
		query += ` LEFT JOIN job_payloads AS p ON p.id = jobs.id`
	}
	query += ` WHERE ` + where
	return query, append([]any{string(ids)}, args...)
}

// queryJobs appends the jobs a query returns to buf.
func (db *DB) queryJobs(ctx context.Context, buf []store.Job, query string, args ...any) ([]store.Job, error) {
	rows, err := db.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return buf, err
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return buf, err
		}
		buf = append(buf, j)
	}
	return buf, rows.Err()
}

// CountJobs returns how many jobs match f.
func (db *DB) CountJobs(ctx context.Context, f store.Filter) (int64, error) {
	var n int64
	if f.Within != nil && f.Match == nil {
		err := batches(f.Within, func(batch []string) error {
			query, args := withinQuery(`count(*)`, &f, batch, false)
			var c int64
			err := db.rdb.QueryRowContext(ctx, query, args...).Scan(&c)
			n += c
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("count jobs: %w", err)
		}
		return n, nil
	}
	if f.Match == nil {
		where, args := conditions(&f)
		err := db.rdb.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE `+where, args...).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("count jobs: %w", err)
		}
		return n, nil
	}
	err := db.scanJobs(ctx, f, "", store.Asc, reads.MatchChunk, func(store.Job) bool { n++; return true })
	if err != nil {
		return 0, fmt.Errorf("count jobs: %w", err)
	}
	return n, nil
}

// JobIDs returns the ID of every job matching f, ascending.
func (db *DB) JobIDs(ctx context.Context, f store.Filter) ([]string, error) {
	var ids []string
	if f.Match != nil {
		err := db.scanJobs(ctx, f, "", store.Asc, reads.MatchChunk, func(j store.Job) bool {
			ids = append(ids, j.ID)
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("list job ids: %w", err)
		}
		return ids, nil
	}
	if f.Within != nil {
		err := batches(f.Within, func(batch []string) error {
			query, args := withinQuery(`jobs.id`, &f, batch, false)
			start := len(ids)
			var err error
			if ids, err = db.queryIDs(ctx, ids, query, args...); err != nil {
				return err
			}
			slices.Sort(ids[start:]) // the batch is in order; the rows come back in any
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list job ids: %w", err)
		}
		return ids, nil
	}
	where, args := conditions(&f)
	ids, err := db.queryIDs(ctx, ids, `SELECT id FROM jobs WHERE `+where+` ORDER BY jobs.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list job ids: %w", err)
	}
	return ids, nil
}

// queryIDs appends the IDs a query returns to ids.
func (db *DB) queryIDs(ctx context.Context, ids []string, query string, args ...any) ([]string, error) {
	rows, err := db.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return ids, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// batches calls fn with the IDs of s in order, withinChunk at a time, until
// fn's first error.
func batches(s *store.IDSet, fn func(batch []string) error) error {
	for ids := s.IDs(); len(ids) > 0; {
		batch := ids[:min(withinChunk, len(ids))]
		ids = ids[len(batch):]
		if err := fn(batch); err != nil {
			return err
		}
	}
	return nil
}

// Queues returns the distinct queue names of the stored jobs that are not
// ready, sorted by byte order: jobs_queue holds no ready job (migration
// 0015), and the server adds the queues of the live jobs it holds.
func (db *DB) Queues(ctx context.Context) ([]string, error) {
	// Hop from each name to the next through the queue index: one probe
	// per distinct queue, however many jobs each holds.
	const q = `WITH RECURSIVE q(name) AS (
		SELECT min(queue) FROM jobs WHERE status <> 1
		UNION ALL
		SELECT (SELECT min(queue) FROM jobs WHERE status <> 1 AND queue > q.name) FROM q WHERE q.name IS NOT NULL
	) SELECT name FROM q WHERE name IS NOT NULL`
	rows, err := db.rdb.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var queues []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		queues = append(queues, name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	return queues, nil
}

// RecoverInFlight returns every in-flight job to ready and returns how many
// there were; the change has committed when it returns (see
// store.Store.RecoverInFlight for when to call it).
func (db *DB) RecoverInFlight(ctx context.Context) (int64, error) {
	var n int64
	g := &group{Ops: []op{recoverInFlight(&n)}, Mode: db.opts.DefaultMode}
	if err := db.q.Enqueue(g).Wait(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

const errorColumns = `job_id, attempt, message, error_type, backtrace, dequeued_at, failed_at`

// ListErrors returns up to limit error records of a job by attempt in
// order, after the exclusive cursor from (0 = from the start). more reports
// whether at least one more record follows the page.
func (db *DB) ListErrors(ctx context.Context, jobID string, from uint32, order store.Order, limit int) (recs []store.ErrorRecord, more bool, err error) {
	if limit <= 0 {
		return nil, false, errors.New("list errors: limit must be positive")
	}
	q := `SELECT ` + errorColumns + ` FROM job_errors WHERE job_id = ?`
	args := []any{jobID}
	cmp, dir := ">", "ASC"
	if order == store.Desc {
		cmp, dir = "<", "DESC"
	}
	if from != 0 {
		q += ` AND attempt ` + cmp + ` ?`
		args = append(args, int64(from))
	}
	q += ` ORDER BY attempt ` + dir + ` LIMIT ?`
	args = append(args, limit+1)
	rows, err := db.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list errors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanError(rows)
		if err != nil {
			return nil, false, fmt.Errorf("list errors: %w", err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list errors: %w", err)
	}
	if len(recs) > limit {
		recs, more = recs[:limit], true
	}
	return recs, more, nil
}

// GetError returns one error record, or ErrNotFound.
func (db *DB) GetError(ctx context.Context, jobID string, attempt uint32) (store.ErrorRecord, error) {
	r, err := scanError(db.read.getError.QueryRowContext(ctx, jobID, int64(attempt)))
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrorRecord{}, store.ErrNotFound
	}
	if err != nil {
		return store.ErrorRecord{}, fmt.Errorf("get error record: %w", err)
	}
	return r, nil
}

// Budgets returns every budget configuration, sorted by key.
func (db *DB) Budgets(ctx context.Context) ([]store.Budget, error) {
	out, err := queryBudgets(ctx, db.rdb)
	if err != nil {
		return nil, fmt.Errorf("list budgets: %w", err)
	}
	return out, nil
}

// querier is the read pool or a read transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryBudgets(ctx context.Context, q querier) ([]store.Budget, error) {
	rows, err := q.QueryContext(ctx, `SELECT key, allocation, strategy, duration_ms, burst,
		created_at, updated_at, per_key_allocation, per_key_strategy, per_key_duration_ms, per_key_burst,
		paused, paused_until, sub_pauses, reset, timezone, spent_ends_at, spent_used, key_overrides, adaptive
		FROM budgets ORDER BY key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Budget
	for rows.Next() {
		b, err := scanBudget(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// scanBudget reads a row of queryBudgets; NULL template columns (a plain
// budget, or a row older than families) read as no template, NULL spent
// columns (nothing spent yet) as no Spent.
func scanBudget(s scanner) (store.Budget, error) {
	var (
		b                    store.Budget
		tAlloc, tDur, tBurst *int64
		tStrategy            *string
		pausedUntil          *int64
		subPauses            *string
		reset, timezone      *string
		endsAt, used         *int64
		keys, adaptive       *string
	)
	err := s.Scan(&b.Key, &b.Allocation, &b.Strategy, &b.DurationMs, &b.Burst, &b.CreatedAt, &b.UpdatedAt,
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

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanJob reads a row of jobColumns.
func scanJob(s scanner) (store.Job, error) {
	var (
		j                                   store.Job
		priority, status, attempts          int64
		retry, boBase, boJitter, retC, retD *int64
		purge                               *int64
		boExp                               *float64
		budgets, uniqueKey                  *string
		uniqueWhile, fairTag, startBy       *int64
		batchKey, batchWhen, batchFold      *string
	)
	err := s.Scan(&j.ID, &j.Queue, &j.Type, &priority, &status, &j.Payload, &j.ReadyAt, &attempts,
		&retry, &boExp, &boBase, &boJitter, &retC, &retD,
		&j.DequeuedAt, &j.FailedAt, &j.CompletedAt, &purge, &budgets, &uniqueKey, &uniqueWhile,
		&batchKey, &batchWhen, &batchFold, &j.BatchOpen, &fairTag, &startBy)
	if err != nil {
		return store.Job{}, err
	}
	if batchKey != nil {
		j.Batch = &store.BatchConfig{Key: *batchKey, When: deref(batchWhen), Fold: deref(batchFold)}
	}
	j.FairTag, j.StartBy = deref(fairTag), deref(startBy)
	j.Priority, j.Status, j.Attempts = uint16(priority), store.Status(status), uint32(attempts)
	j.RetryLimit, j.Backoff, j.Retention = overrides(retry, boExp, boBase, boJitter, retC, retD)
	if purge != nil {
		j.PurgeAt = *purge
	}
	if uniqueKey != nil {
		j.UniqueKey, j.UniqueWhile = *uniqueKey, store.UniqueWhile(deref(uniqueWhile))
	}
	if budgets != nil {
		if j.Budgets, err = bindtext.Decode(*budgets); err != nil {
			return store.Job{}, err
		}
	}
	return j, nil
}

// overrides builds a job's overrides from their columns (nil: NULL).
func overrides(retry *int64, boExp *float64, boBase, boJitter, retC, retD *int64) (*uint32, *store.Backoff, *store.Retention) {
	var limit *uint32
	var bo *store.Backoff
	var ret *store.Retention
	if retry != nil {
		v := uint32(*retry)
		limit = &v
	}
	if boExp != nil || boBase != nil || boJitter != nil {
		bo = &store.Backoff{Exponent: float32(deref(boExp)), BaseMs: uint32(deref(boBase)), JitterMs: uint32(deref(boJitter))}
	}
	if retC != nil || retD != nil {
		ret = &store.Retention{}
		if retC != nil {
			v := uint64(*retC)
			ret.CompletedMs = &v
		}
		if retD != nil {
			v := uint64(*retD)
			ret.DeadMs = &v
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
func scanError(s scanner) (store.ErrorRecord, error) {
	var r store.ErrorRecord
	var attempt int64
	err := s.Scan(&r.JobID, &attempt, &r.Message, &r.ErrorType, &r.Backtrace, &r.DequeuedAt, &r.FailedAt)
	r.Attempt = uint32(attempt)
	return r, err
}

// conditions renders the SQL conditions of f (all but Match) and their
// arguments; "1" when f selects everything.
func conditions(f *store.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, a ...any) {
		conds = append(conds, cond)
		args = append(args, a...)
	}
	addList := func(cond string, a []any) { add(cond, a...) }
	if len(f.IDs) > 0 {
		addList(inList("jobs.id", f.IDs))
	}
	if len(f.Queues) > 0 {
		addList(inList("queue", f.Queues))
	}
	if len(f.Types) > 0 {
		addList(inList("type", f.Types))
	}
	if len(f.Statuses) > 0 {
		addList(inList("status", f.Statuses))
		if !slices.Contains(f.Statuses, store.Ready) {
			add(`status <> 1`) // lets SQLite use the partial indexes jobs_status and jobs_queue
		}
	}
	if len(f.BudgetKeys) > 0 {
		cond, keys := budgetKeyCond(f)
		add(`EXISTS (SELECT 1 FROM json_each(jobs.budgets) AS b WHERE `+cond+`)`, keys...)
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
				add(`0`)
			} else {
				add(r.col+` >= ?`, int64(*lo))
			}
		}
		if hi := r.r.Hi; hi != nil && *hi <= math.MaxInt64 {
			add(r.col+` <= ?`, int64(*hi))
		}
	}
	if f.Now != 0 {
		add(`(purge_at IS NULL OR purge_at > ?)`, f.Now)
	}
	if len(conds) == 0 {
		return "1", nil
	}
	return strings.Join(conds, " AND "), args
}

// budgetKeyCond renders the condition on one binding (b) of Filter's
// budget keys: one of BudgetKeys, or under one of SubBudgetsOf but not
// one of NotSubBudgets nor under one. instr(k, p) = 1 tests a prefix
// without LIKE's wildcards, which keys may hold.
func budgetKeyCond(f *store.Filter) (string, []any) {
	const key = "json_extract(b.value, '$.key')"
	cond, args := inList(key, f.BudgetKeys)
	if len(f.SubBudgetsOf) == 0 {
		return cond, args
	}
	under := func(keys []string) string {
		prefixes := make([]string, len(keys))
		for i, k := range keys {
			prefixes[i] = k + "/"
		}
		buf, _ := json.Marshal(prefixes) // strings: cannot fail
		args = append(args, string(buf))
		return `EXISTS (SELECT 1 FROM json_each(?) AS p WHERE instr(` + key + `, p.value) = 1)`
	}
	cond = cond + ` OR (` + under(f.SubBudgetsOf)
	if len(f.NotSubBudgets) > 0 {
		own, ownArgs := inList(key, f.NotSubBudgets)
		args = append(args, ownArgs...)
		cond += ` AND NOT (` + own + ` OR ` + under(f.NotSubBudgets) + `)`
	}
	return `(` + cond + `))`, args
}

// inList renders "col IN (…)" for values: one placeholder per value, or, for
// long lists, one JSON array (SQLite bounds the number of placeholders).
func inList[T string | store.Status](col string, values []T) (string, []any) {
	args := make([]any, len(values))
	for i, v := range values {
		switch v := any(v).(type) {
		case store.Status:
			args[i] = int64(v)
		default:
			args[i] = v
		}
	}
	if len(values) > inlineListMax {
		buf, _ := json.Marshal(args) // strings and integers: cannot fail
		return col + ` IN (SELECT value FROM json_each(?))`, []any{string(buf)}
	}
	return col + ` IN (?` + strings.Repeat(`, ?`, len(values)-1) + `)`, args
}

// IntegrityCheck runs SQLite's integrity check and returns its findings,
// nil when the database is sound.
func (db *DB) IntegrityCheck(ctx context.Context) error {
	rows, err := db.rdb.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))
	}
	return nil
}
