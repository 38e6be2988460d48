package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/bindtext"
)

// rowColumns are the columns of jobs, in the order rowArgs uses.
const rowColumns = `id, queue, type, priority, status, ready_at, attempts,
	retry_limit, backoff_exponent, backoff_base_ms, backoff_jitter_ms,
	retention_completed_ms, retention_dead_ms,
	dequeued_at, failed_at, completed_at, purge_at, budgets,
	batch_key, batch_when, batch_fold, batch_open, start_by`

// insertColumns are the columns of a new job: rowColumns, its unique key
// and its fair-share tag, in the order insertArgs uses.
const insertColumns = rowColumns + `, unique_key, unique_while, unique_holder, fair_tag`

// jobColumns are the columns of a whole job, payload included, in the
// order scanJob reads them, from jobsWithPayload.
const jobColumns = `jobs.id, queue, type, priority, status, p.payload, ready_at, attempts,
	retry_limit, backoff_exponent, backoff_base_ms, backoff_jitter_ms,
	retention_completed_ms, retention_dead_ms,
	dequeued_at, jobs.failed_at, completed_at, purge_at, budgets, unique_key, unique_while,
	batch_key, batch_when, batch_fold, batch_open, fair_tag, start_by`

// jobsWithPayload joins each job to its payload, for jobColumns.
const jobsWithPayload = `jobs LEFT JOIN job_payloads AS p ON p.id = jobs.id`

// stmtSQL is a statement to prepare and where to keep it.
type stmtSQL struct {
	s   **sql.Stmt
	sql string
}

// writer owns the only writing connection and its prepared statements. It
// is used by the writer goroutine alone (and by Open before that starts).
type writer struct {
	conn *sql.Conn
	mode store.CommitMode // the synchronous setting in force

	begin, commit                   *sql.Stmt
	insertJob, insertPlain          *sql.Stmt
	insertPayload                   *sql.Stmt
	putJob, setStatus               *sql.Stmt
	retry, finish, patch, rebind    *sql.Stmt
	deleteJob, deletePayload, probe *sql.Stmt
	setPayload, closeBatch          *sql.Stmt
	clearStartBy                    *sql.Stmt
	addError, putBudget, delBudget  *sql.Stmt
	spendBudget                     *sql.Stmt
	deleteEverything, recoverFlight *sql.Stmt
	// deleteTriggers are the names and SQL of the delete triggers of jobs,
	// as the schema has them (see deleteAll).
	deleteTriggers [][2]string
	cron           cronStmts
	// Unique keys: the holder of a key lets it go, a job takes its own.
	releaseKey, releaseKeyOf *sql.Stmt
	holdKey, dropHolder      *sql.Stmt
	runs                     runStmts
}

// prepare prepares the writer's statements and sets the initial commit mode.
func (w *writer) prepare(ctx context.Context, mode store.CommitMode) error {
	stmts := []stmtSQL{
		{&w.begin, `BEGIN IMMEDIATE`},
		{&w.commit, `COMMIT`},
		{&w.insertJob, `INSERT INTO jobs (` + insertColumns + `)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
				?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)`},
		// Most new jobs have no overrides and no timestamps yet: fewer
		// values to bind (each bind is a call into SQLite). The fair tag
		// is here: a family's backlog is made of such jobs.
		{&w.insertPlain, `INSERT INTO jobs (id, queue, type, priority, status, ready_at, attempts, budgets, fair_tag)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.insertPayload, `INSERT INTO job_payloads (id, payload, failed_at) VALUES (?, ?, ?)`},
		{&w.putJob, `UPDATE jobs SET queue = ?2, type = ?3, priority = ?4, status = ?5,
			ready_at = ?6, attempts = ?7, retry_limit = ?8,
			backoff_exponent = ?9, backoff_base_ms = ?10, backoff_jitter_ms = ?11,
			retention_completed_ms = ?12, retention_dead_ms = ?13,
			dequeued_at = ?14, failed_at = ?15, completed_at = ?16, purge_at = ?17, budgets = ?18,
			batch_key = ?19, batch_when = ?20, batch_fold = ?21, batch_open = ?22, start_by = ?23
			WHERE id = ?1`},
		{&w.setStatus, `UPDATE jobs SET status = ?2, dequeued_at = iif(?3 = 0, dequeued_at, ?3) WHERE id = ?1`},
		{&w.retry, `UPDATE jobs SET attempts = ?2, failed_at = ?3, ready_at = ?4, status = ?5 WHERE id = ?1`},
		{&w.finish, `UPDATE jobs SET status = ?2, attempts = ?3, failed_at = ?4, completed_at = ?5, purge_at = ?6
			WHERE id = ?1`},
		{&w.patch, `UPDATE jobs SET queue = ?2, priority = ?3, status = ?4, ready_at = ?5, retry_limit = ?6,
			backoff_exponent = ?7, backoff_base_ms = ?8, backoff_jitter_ms = ?9,
			retention_completed_ms = ?10, retention_dead_ms = ?11 WHERE id = ?1`},
		{&w.rebind, `UPDATE jobs SET budgets = ?2 WHERE id = ?1`},
		// The triggers of jobs delete the job's payload and, if it has
		// any, its error records (migration 0009).
		{&w.deleteJob, `DELETE FROM jobs WHERE id = ?`},
		{&w.deletePayload, `DELETE FROM job_payloads WHERE id = ?`},
		{&w.probe, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?)`},
		{&w.setPayload, `INSERT OR REPLACE INTO job_payloads (id, payload, failed_at)
			SELECT ?1, ?2, failed_at FROM jobs WHERE id = ?1`},
		{&w.closeBatch, `UPDATE jobs SET batch_open = 0 WHERE id = ?`},
		{&w.clearStartBy, `UPDATE jobs SET start_by = NULL WHERE id = ?`},
		{&w.addError, `INSERT OR REPLACE INTO job_errors
			(job_id, attempt, message, error_type, backtrace, dequeued_at, failed_at)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?1)`},
		// An upsert, not INSERT OR REPLACE: a replacement keeps spent_*,
		// which only SpendBudget writes (a new row has them NULL).
		{&w.putBudget, `INSERT INTO budgets
			(key, allocation, strategy, duration_ms, burst, created_at, updated_at,
			per_key_allocation, per_key_strategy, per_key_duration_ms, per_key_burst, paused, paused_until, sub_pauses,
			reset, timezone, key_overrides, adaptive)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET allocation = excluded.allocation, strategy = excluded.strategy,
				duration_ms = excluded.duration_ms, burst = excluded.burst,
				created_at = excluded.created_at, updated_at = excluded.updated_at,
				per_key_allocation = excluded.per_key_allocation, per_key_strategy = excluded.per_key_strategy,
				per_key_duration_ms = excluded.per_key_duration_ms, per_key_burst = excluded.per_key_burst,
				paused = excluded.paused, paused_until = excluded.paused_until, sub_pauses = excluded.sub_pauses,
				reset = excluded.reset, timezone = excluded.timezone, key_overrides = excluded.key_overrides,
				adaptive = excluded.adaptive`},
		{&w.spendBudget, `UPDATE budgets SET spent_ends_at = ?2, spent_used = ?3 WHERE key = ?1`},
		{&w.delBudget, `DELETE FROM budgets WHERE key = ?`},
		{&w.deleteEverything, `DELETE FROM job_payloads; DELETE FROM job_errors; DELETE FROM jobs; DELETE FROM budgets`},
		// "status <> 1" lets SQLite use the partial index jobs_status.
		{&w.recoverFlight, `UPDATE jobs SET status = 1 WHERE status = 2 AND status <> 1`},
		// "unique_holder = 1" lets SQLite use jobs_unique_holder.
		{&w.releaseKey, `UPDATE jobs SET unique_holder = NULL WHERE unique_key = ?1 AND unique_holder = 1 AND id <> ?2`},
		{&w.releaseKeyOf, `UPDATE jobs SET unique_holder = NULL
			WHERE unique_key = (SELECT unique_key FROM jobs WHERE id = ?1) AND unique_holder = 1 AND id <> ?1`},
		{&w.holdKey, `UPDATE jobs SET unique_holder = 1 WHERE id = ? AND unique_key IS NOT NULL`},
		{&w.dropHolder, `UPDATE jobs SET unique_holder = NULL WHERE id = ?`},
	}
	for _, s := range append(append(stmts, w.cron.list()...), w.runs.list()...) {
		st, err := w.conn.PrepareContext(ctx, s.sql)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", s.sql, err)
		}
		*s.s = st
	}
	if err := w.loadDeleteTriggers(ctx); err != nil {
		return err
	}
	w.mode = mode
	if err := w.setMode(mode, true); err != nil {
		return fmt.Errorf("set commit mode: %w", err)
	}
	return nil
}

// close finalizes the statements and closes the connection.
func (w *writer) close() error {
	for _, s := range []*sql.Stmt{w.begin, w.commit,
		w.insertJob, w.insertPlain, w.insertPayload, w.putJob, w.setStatus, w.retry, w.finish, w.patch, w.rebind,
		w.deleteJob, w.deletePayload, w.probe, w.setPayload, w.closeBatch, w.clearStartBy,
		w.addError, w.putBudget, w.spendBudget, w.delBudget, w.deleteEverything, w.recoverFlight,
		w.cron.putGroup, w.cron.delGroup, w.cron.delGroupEntries, w.cron.delAll,
		w.cron.putEntry, w.cron.delEntry, w.cron.fired,
		w.releaseKey, w.releaseKeyOf, w.holdKey, w.dropHolder} {
		if s != nil {
			_ = s.Close()
		}
	}
	for _, s := range w.runs.all() {
		if s != nil {
			_ = s.Close()
		}
	}
	return w.conn.Close()
}

// setMode issues PRAGMA synchronous when the mode changes (or when force).
func (w *writer) setMode(mode store.CommitMode, force bool) error {
	if mode == w.mode && !force {
		return nil
	}
	// Not a prepared statement: SQLite applies this PRAGMA when it compiles
	// it, so re-running a prepared one would change nothing.
	q := "PRAGMA synchronous = NORMAL"
	if mode == store.Fsync {
		q = "PRAGMA synchronous = FULL"
	}
	if _, err := w.conn.ExecContext(context.Background(), q); err != nil {
		return err
	}
	w.mode = mode
	return nil
}

// runTx commits the groups in one transaction, in the strongest commit mode
// any of them needs. On failure it rolls back and returns the error.
func (db *DB) runTx(groups []*group) (err error) {
	db.txs.Add(1)
	w := db.w
	mode := store.Buffered
	for _, g := range groups {
		mode = max(mode, g.Mode)
	}
	if err := w.setMode(mode, false); err != nil {
		return wrapWrite("set commit mode", err)
	}
	full, err := db.applyFault()
	if err != nil {
		return err
	}
	now := db.now()
	ops, written, held := db.txOps(groups, now)
	if _, err := w.begin.Exec(); err != nil {
		return wrapWrite("begin", err)
	}
	defer func() {
		if err != nil {
			// A failed COMMIT may already have rolled back; ignore "no
			// transaction is active".
			_, _ = w.conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	for i := 0; i < len(ops); {
		if n := runLength(ops[i:]); n > 0 && !db.opts.plainWrites {
			if err := w.applyRun(ops[i : i+n]); err != nil {
				return err
			}
			i += n
			continue
		}
		if err := w.apply(&ops[i]); err != nil {
			return err
		}
		i++
	}
	if full {
		return errDiskFull
	}
	if _, err := w.commit.Exec(); err != nil {
		return wrapWrite("commit", err)
	}
	db.keep(written, held, now)
	return nil
}

// apply runs one op inside the writer's transaction.
func (w *writer) apply(o *op) error {
	var err error
	switch o.kind {
	case opNone, opFlushMarks:
		return nil
	case opProbeNew:
		var exists bool
		if err = w.probe.QueryRow(o.id).Scan(&exists); err == nil && exists {
			return fmt.Errorf("insert job %s: job already exists", o.id)
		}
		return wrapOp("insert job", o.id, err)
	case opRecoverInFlight:
		var res sql.Result
		if res, err = w.recoverFlight.Exec(); err == nil {
			*o.count, err = res.RowsAffected()
		}
		return wrapOp("recover in-flight jobs", "", err)
	}
	switch s := o.src.(type) {
	case store.InsertJobOp:
		err = w.insert(&s.Job)
		if err == nil && len(s.Job.Payload) > 0 {
			_, err = w.insertPayload.Exec(s.Job.ID, s.Job.Payload, s.Job.FailedAt)
		}
		return wrapOp("insert job", o.id, err)
	case store.PutJobOp:
		_, err = w.putJob.Exec(rowArgs(&s.Job)...)
		return wrapOp("put job", o.id, err)
	case store.SetStatusOp:
		_, err = w.setStatus.Exec(s.ID, int64(s.Status), s.DequeuedAt)
		return wrapOp("set job status", o.id, err)
	case store.RetryOp:
		_, err = w.retry.Exec(s.ID, int64(s.Attempts), s.FailedAt, s.ReadyAt, int64(s.Status))
		return wrapOp("retry job", o.id, err)
	case store.FinishOp:
		_, err = w.finish.Exec(s.ID, int64(s.Status), int64(s.Attempts), s.FailedAt, s.CompletedAt, nullZero(s.PurgeAt))
		return wrapOp("finish job", o.id, err)
	case store.PatchJobOp:
		_, err = w.patch.Exec(patchArgs(&s.Patch)...)
		return wrapOp("patch job", o.id, err)
	case store.SetBudgetsOp:
		_, err = w.rebind.Exec(s.ID, bindingsArg(s.Budgets))
		return wrapOp("set budgets of job", o.id, err)
	case store.SetPayloadOp:
		if len(s.Payload) == 0 {
			_, err = w.deletePayload.Exec(s.ID)
		} else {
			_, err = w.setPayload.Exec(s.ID, s.Payload)
		}
		return wrapOp("set payload of job", o.id, err)
	case store.CloseBatchOp:
		_, err = w.closeBatch.Exec(s.ID)
		return wrapOp("close batch of job", o.id, err)
	case store.ClearStartByOp:
		_, err = w.clearStartBy.Exec(s.ID)
		return wrapOp("clear start_by of job", o.id, err)
	case store.UniqueHolderOp:
		return wrapOp("set the unique key holder of job", o.id, w.setHolder(s))
	case store.DeleteJobOp:
		_, err = w.deleteJob.Exec(s.ID)
		return wrapOp("delete job", o.id, err)
	case store.AddErrorOp:
		r := &s.Record
		_, err = w.addError.Exec(r.JobID, int64(r.Attempt), r.Message, r.ErrorType, r.Backtrace,
			r.DequeuedAt, r.FailedAt)
		return wrapOp("add error record of job", o.id, err)
	case store.PutBudgetOp:
		_, err = w.putBudget.Exec(budgetArgs(&s.Budget)...)
		return wrapOp("put budget", o.id, err)
	case store.SpendBudgetOp:
		_, err = w.spendBudget.Exec(s.Key, s.Spent.EndsAt, s.Spent.Used)
		return wrapOp("spend budget", o.id, err)
	case store.DeleteBudgetOp:
		_, err = w.delBudget.Exec(s.Key)
		return wrapOp("delete budget", o.id, err)
	case store.DeleteEverythingOp:
		return wrapOp("delete everything", "", w.deleteAll())
	}
	if o.kind == opCron {
		return w.applyCron(o.src)
	}
	return fmt.Errorf("unknown store op %T", o.src)
}

// jobDeleteTriggers name the triggers that delete a job's payload and error
// records with its row (migration 0009).
var jobDeleteTriggers = []string{"jobs_deleted", "jobs_deleted_errors"}

// loadDeleteTriggers reads the SQL of jobDeleteTriggers from the schema.
func (w *writer) loadDeleteTriggers(ctx context.Context) error {
	w.deleteTriggers = w.deleteTriggers[:0]
	for _, name := range jobDeleteTriggers {
		var q string
		err := w.conn.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = ?`, name).Scan(&q)
		if err != nil {
			return fmt.Errorf("read trigger %s: %w", name, err)
		}
		w.deleteTriggers = append(w.deleteTriggers, [2]string{name, q})
	}
	return nil
}

// deleteAll deletes every job, record and budget. SQLite empties a table
// at once only when it has no delete trigger; with one it deletes row by
// row, some thirty times slower. So the triggers of jobs are dropped for
// the deletes and made again, in the same transaction (a schema change:
// the statements of every connection are prepared again on their next use,
// which a reset can afford).
func (w *writer) deleteAll() error {
	ctx := context.Background()
	for _, t := range w.deleteTriggers {
		if _, err := w.conn.ExecContext(ctx, "DROP TRIGGER "+t[0]); err != nil {
			return err
		}
	}
	if _, err := w.deleteEverything.Exec(); err != nil {
		return err
	}
	for _, t := range w.deleteTriggers {
		if _, err := w.conn.ExecContext(ctx, t[1]); err != nil {
			return err
		}
	}
	return nil
}

// insert writes the row of a new job; one with a unique key takes the key
// from its previous holder.
func (w *writer) insert(j *store.Job) error {
	var err error
	if j.UniqueKey != "" {
		if _, err = w.releaseKey.Exec(j.UniqueKey, j.ID); err != nil {
			return err
		}
	}
	if j.Plain() {
		_, err = w.insertPlain.Exec(j.ID, j.Queue, j.Type, int64(j.Priority), int64(j.Status), j.ReadyAt,
			int64(j.Attempts), bindingsArg(j.Budgets), nullZero(j.FairTag))
	} else {
		_, err = w.insertJob.Exec(insertArgs(j)...)
	}
	return err
}

// setHolder makes a job its key's holder, taking the key from the previous
// one, or lets the job's key go.
func (w *writer) setHolder(u store.UniqueHolderOp) error {
	if !u.Holds {
		_, err := w.dropHolder.Exec(u.ID)
		return err
	}
	if _, err := w.releaseKeyOf.Exec(u.ID); err != nil {
		return err
	}
	_, err := w.holdKey.Exec(u.ID)
	return err
}

// wrapOp gives an op's error its context ("insert job <id>: …").
func wrapOp(what, id string, err error) error {
	if err == nil {
		return nil
	}
	if id != "" {
		what += " " + id
	}
	return wrapWrite(what, err)
}

// rowArgs returns j's values in rowColumns order, NULL for unset options.
func rowArgs(j *store.Job) []any {
	retry, boExp, boBase, boJitter, retCompleted, retDead := overrideArgs(j.RetryLimit, j.Backoff, j.Retention)
	var key, when, fold any
	if b := j.Batch; b != nil {
		key, when, fold = b.Key, b.When, b.Fold
	}
	open := int64(0)
	if j.BatchOpen {
		open = 1
	}
	return []any{
		j.ID, j.Queue, j.Type, int64(j.Priority), int64(j.Status), j.ReadyAt,
		int64(j.Attempts), retry, boExp, boBase, boJitter, retCompleted, retDead,
		j.DequeuedAt, j.FailedAt, j.CompletedAt, nullZero(j.PurgeAt), bindingsArg(j.Budgets),
		key, when, fold, open, nullZero(j.StartBy),
	}
}

// insertArgs returns j's values in insertColumns order: a job with a key
// holds it.
func insertArgs(j *store.Job) []any {
	var key, while, holder any
	if j.UniqueKey != "" {
		key, while, holder = j.UniqueKey, int64(j.UniqueWhile), int64(1)
	}
	return append(rowArgs(j), key, while, holder, nullZero(j.FairTag))
}

// budgetArgs returns b's values in the order of the putBudget statement:
// the template's columns are NULL for a plain budget, paused_until for a
// pause without end, sub_pauses when no sub-budget is paused, reset and
// timezone when not a calendar budget (or in UTC), key_overrides when the
// family has none. b.Spent is not
// configuration and is not written (see store.PutBudget).
func budgetArgs(b *store.Budget) []any {
	var alloc, strategy, duration, burst any
	paused := int64(0)
	if b.Paused {
		paused = 1
	}
	if t := b.PerKey; t != nil {
		alloc, strategy, duration, burst = t.Allocation, t.Strategy, t.DurationMs, t.Burst
	}
	return []any{b.Key, b.Allocation, b.Strategy, b.DurationMs, b.Burst, b.CreatedAt, b.UpdatedAt,
		alloc, strategy, duration, burst, paused, nullZero(b.PausedUntil), store.EncodeSubPauses(b.SubPauses),
		nullEmpty(b.Reset), nullEmpty(b.Timezone), store.EncodeKeys(b.Keys), store.EncodeAdaptive(b.Adaptive)}
}

// patchArgs returns the arguments of the patch statement.
func patchArgs(p *store.JobPatch) []any {
	retry, boExp, boBase, boJitter, retCompleted, retDead := overrideArgs(p.RetryLimit, p.Backoff, p.Retention)
	return []any{p.ID, p.Queue, int64(p.Priority), int64(p.Status), p.ReadyAt,
		retry, boExp, boBase, boJitter, retCompleted, retDead}
}

// overrideArgs returns the column values of a job's overrides, NULL for
// each one unset.
func overrideArgs(limit *uint32, bo *store.Backoff, ret *store.Retention) (retry, boExp, boBase, boJitter, retCompleted, retDead any) {
	if limit != nil {
		retry = int64(*limit)
	}
	if bo != nil {
		boExp, boBase, boJitter = float64(bo.Exponent), int64(bo.BaseMs), int64(bo.JitterMs)
	}
	if ret != nil {
		// uint64 milliseconds are stored bit for bit in SQLite's int64.
		if ret.CompletedMs != nil {
			retCompleted = int64(*ret.CompletedMs)
		}
		if ret.DeadMs != nil {
			retDead = int64(*ret.DeadMs)
		}
	}
	return retry, boExp, boBase, boJitter, retCompleted, retDead
}

// nullZero maps 0 ("unset") to NULL, for purge_at, fair_tag, start_by
// and paused_until.
func nullZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

// bindingsArg is the stored form of a job's bindings, NULL when none.
func bindingsArg(bs []store.Binding) any {
	if len(bs) == 0 {
		return nil
	}
	return bindtext.Encode(bs)
}
