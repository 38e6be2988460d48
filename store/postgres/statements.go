package postgres

import (
	"github.com/jackc/pgx/v5"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/bindtext"
)

// The batched statements of a phase: each takes its ops' values as one
// array per column and joins them back into rows with unnest. An UPDATE's
// "jobs.id = ANY($1)" (the IDs again) gives the planner an index
// condition: without it, statistics taken while the table was empty (a
// drained queue) let it scan the whole table for every batch.

// insertSQL inserts the jobs of the arrays. Those with a unique key hold
// it: the keys' previous holders let them go first. The fair tag is
// written here only: it never changes.
const insertSQL = `INSERT INTO jobs (id, queue, type, priority, status, payload, ready_at, attempts,
		retry_limit, backoff_exponent, backoff_base_ms, backoff_jitter_ms,
		retention_completed_ms, retention_dead_ms, dequeued_at, failed_at, completed_at, purge_at,
		budgets, batch_key, batch_when, batch_fold, batch_open, unique_key, unique_while, unique_holder,
		fair_tag, start_by)
	SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[], $4::int4[], $5::int2[], $6::bytea[],
		$7::int8[], $8::int8[], $9::int8[], $10::float8[], $11::int8[], $12::int8[], $13::int8[],
		$14::int8[], $15::int8[], $16::int8[], $17::int8[], $18::int8[], $19::text[], $20::bytea[],
		$21::bytea[], $22::bytea[], $23::bool[], $24::bytea[], $25::int2[], $26::bool[], $27::int8[],
		$28::int8[])`

// rowCols are a job's columns but its payload and unique key, as PutJob
// writes them: its batch and start_by included.
type rowCols struct {
	ids                    []string
	queues, types          [][]byte
	priorities             []int32
	statuses               []int16
	readyAt, attempts      []int64
	retryLimit             []*int64
	boExp                  []*float64
	boBase, boJitter       []*int64
	retC, retD             []*int64
	dequeued, failed, done []int64
	purge                  []*int64
	budgets                []*string
	batchKey, when, fold   [][]byte // nil: not batched
	batchOpen              []bool
	startBy                []*int64
}

func (c *rowCols) add(j *store.Job) {
	retry, exp, base, jitter, retC, retD := overrideCols(j.RetryLimit, j.Backoff, j.Retention)
	c.ids = append(c.ids, j.ID)
	c.queues = append(c.queues, []byte(j.Queue))
	c.types = append(c.types, []byte(j.Type))
	c.priorities = append(c.priorities, int32(j.Priority))
	c.statuses = append(c.statuses, int16(j.Status))
	c.readyAt = append(c.readyAt, j.ReadyAt)
	c.attempts = append(c.attempts, int64(j.Attempts))
	c.retryLimit = append(c.retryLimit, retry)
	c.boExp = append(c.boExp, exp)
	c.boBase = append(c.boBase, base)
	c.boJitter = append(c.boJitter, jitter)
	c.retC = append(c.retC, retC)
	c.retD = append(c.retD, retD)
	c.dequeued = append(c.dequeued, j.DequeuedAt)
	c.failed = append(c.failed, j.FailedAt)
	c.done = append(c.done, j.CompletedAt)
	c.purge = append(c.purge, nullZero(j.PurgeAt))
	c.budgets = append(c.budgets, bindingsCol(j.Budgets))
	var key, when, fold []byte
	if b := j.Batch; b != nil {
		key, when, fold = nonNil(b.Key), nonNil(b.When), nonNil(b.Fold)
	}
	c.batchKey, c.when, c.fold = append(c.batchKey, key), append(c.when, when), append(c.fold, fold)
	c.batchOpen = append(c.batchOpen, j.BatchOpen)
	c.startBy = append(c.startBy, nullZero(j.StartBy))
}

// insertPlainSQL inserts plain jobs (store.Job.Plain): ten arrays, not
// twenty-seven, for the jobs most enqueues make.
const insertPlainSQL = `INSERT INTO jobs (id, queue, type, priority, status, payload, ready_at, attempts,
		budgets, fair_tag)
	SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[], $4::int4[], $5::int2[], $6::bytea[],
		$7::int8[], $8::int8[], $9::text[], $10::int8[])`

// plainCols are the columns insertPlainSQL writes.
type plainCols struct {
	ids               []string
	queues, types     [][]byte
	payloads          [][]byte
	priorities        []int32
	statuses          []int16
	readyAt, attempts []int64
	budgets           []*string
	tags              []*int64
}

func (c *plainCols) add(j *store.Job) {
	var payload []byte
	if len(j.Payload) > 0 {
		payload = j.Payload
	}
	c.ids = append(c.ids, j.ID)
	c.queues, c.types = append(c.queues, []byte(j.Queue)), append(c.types, []byte(j.Type))
	c.payloads = append(c.payloads, payload)
	c.priorities, c.statuses = append(c.priorities, int32(j.Priority)), append(c.statuses, int16(j.Status))
	c.readyAt, c.attempts = append(c.readyAt, j.ReadyAt), append(c.attempts, int64(j.Attempts))
	c.budgets, c.tags = append(c.budgets, bindingsCol(j.Budgets)), append(c.tags, nullZero(j.FairTag))
}

// queueInserts queues the inserts of new jobs, the plain ones apart (the
// order of inserts of different jobs does not matter), and returns the
// greatest ID.
func queueInserts(b *pgx.Batch, ops []store.Op) string {
	var plain plainCols
	var rest []store.Op
	maxID := ""
	for _, o := range ops {
		ins := o.(store.InsertJobOp)
		maxID = max(maxID, ins.Job.ID)
		if ins.Job.Plain() {
			plain.add(&ins.Job)
		} else {
			rest = append(rest, o)
		}
	}
	if len(plain.ids) > 0 {
		b.Queue(insertPlainSQL, plain.ids, plain.queues, plain.types, plain.priorities, plain.statuses,
			plain.payloads, plain.readyAt, plain.attempts, plain.budgets, plain.tags)
	}
	if len(rest) > 0 {
		queueFullInserts(b, rest)
	}
	return maxID
}

// queueFullInserts queues the inserts of jobs that set any column.
func queueFullInserts(b *pgx.Batch, ops []store.Op) {
	var (
		c        rowCols
		payloads [][]byte
		keys     [][]byte
		whiles   []*int16
		holders  []*bool
		tags     []*int64
		released [][]byte
	)
	for _, o := range ops {
		ins := o.(store.InsertJobOp)
		j := &ins.Job
		c.add(j)
		var payload []byte
		if len(j.Payload) > 0 {
			payload = j.Payload
		}
		payloads = append(payloads, payload)
		tags = append(tags, nullZero(j.FairTag))
		if j.UniqueKey == "" {
			keys, whiles, holders = append(keys, nil), append(whiles, nil), append(holders, nil)
			continue
		}
		w, yes := int16(j.UniqueWhile), true
		keys, whiles, holders = append(keys, []byte(j.UniqueKey)), append(whiles, &w), append(holders, &yes)
		released = append(released, []byte(j.UniqueKey))
	}
	if len(released) > 0 {
		b.Queue(`UPDATE jobs SET unique_holder = NULL WHERE unique_key = ANY($1) AND unique_holder`, released)
	}
	b.Queue(insertSQL, c.ids, c.queues, c.types, c.priorities, c.statuses, payloads, c.readyAt, c.attempts,
		c.retryLimit, c.boExp, c.boBase, c.boJitter, c.retC, c.retD, c.dequeued, c.failed, c.done, c.purge,
		c.budgets, c.batchKey, c.when, c.fold, c.batchOpen, keys, whiles, holders, tags, c.startBy)
}

func queuePuts(b *pgx.Batch, ops []store.Op) {
	var c rowCols
	for _, o := range ops {
		put := o.(store.PutJobOp)
		c.add(&put.Job)
	}
	b.Queue(`UPDATE jobs SET queue = u.queue, type = u.type, priority = u.priority, status = u.status,
			ready_at = u.ready_at, attempts = u.attempts, retry_limit = u.retry_limit,
			backoff_exponent = u.exp, backoff_base_ms = u.base, backoff_jitter_ms = u.jitter,
			retention_completed_ms = u.ret_c, retention_dead_ms = u.ret_d, dequeued_at = u.dequeued,
			failed_at = u.failed, completed_at = u.done, purge_at = u.purge, budgets = u.budgets,
			batch_key = u.batch_key, batch_when = u.batch_when, batch_fold = u.batch_fold, batch_open = u.batch_open,
			start_by = u.start_by
		FROM unnest($1::text[], $2::bytea[], $3::bytea[], $4::int4[], $5::int2[], $6::int8[], $7::int8[],
			$8::int8[], $9::float8[], $10::int8[], $11::int8[], $12::int8[], $13::int8[], $14::int8[],
			$15::int8[], $16::int8[], $17::int8[], $18::text[], $19::bytea[], $20::bytea[], $21::bytea[], $22::bool[],
			$23::int8[])
			AS u(id, queue, type, priority, status, ready_at, attempts, retry_limit, exp, base, jitter,
				ret_c, ret_d, dequeued, failed, done, purge, budgets, batch_key, batch_when, batch_fold, batch_open,
				start_by)
		WHERE jobs.id = u.id AND jobs.id = ANY($1)`,
		c.ids, c.queues, c.types, c.priorities, c.statuses, c.readyAt, c.attempts, c.retryLimit,
		c.boExp, c.boBase, c.boJitter, c.retC, c.retD, c.dequeued, c.failed, c.done, c.purge, c.budgets,
		c.batchKey, c.when, c.fold, c.batchOpen, c.startBy)
}

func queueStatuses(b *pgx.Batch, ops []store.Op) {
	// One statement per (status, dequeued_at): the IDs of a batch of
	// dispatches share a few milliseconds, and "id = ANY" is an index
	// lookup a job whatever the statistics say.
	type mark struct {
		status   int16
		dequeued int64
	}
	var order []mark
	ids := make(map[mark][]string)
	for _, o := range ops {
		s := o.(store.SetStatusOp)
		m := mark{int16(s.Status), s.DequeuedAt}
		if _, ok := ids[m]; !ok {
			order = append(order, m)
		}
		ids[m] = append(ids[m], s.ID)
	}
	for _, m := range order {
		b.Queue(`UPDATE jobs SET status = $2::int2, dequeued_at = CASE WHEN $3::int8 = 0 THEN dequeued_at ELSE $3::int8 END
			WHERE id = ANY($1)`, ids[m], m.status, m.dequeued)
	}
}

func queueRetries(b *pgx.Batch, ops []store.Op) {
	n := len(ops)
	ids, attempts, failed, ready, statuses := make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int16, n)
	for i, o := range ops {
		r := o.(store.RetryOp)
		ids[i], attempts[i], failed[i], ready[i], statuses[i] = r.ID, int64(r.Attempts), r.FailedAt, r.ReadyAt, int16(r.Status)
	}
	b.Queue(`UPDATE jobs SET attempts = u.attempts, failed_at = u.failed, ready_at = u.ready, status = u.status
		FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int2[]) AS u(id, attempts, failed, ready, status)
		WHERE jobs.id = u.id AND jobs.id = ANY($1)`, ids, attempts, failed, ready, statuses)
}

func queueFinishes(b *pgx.Batch, ops []store.Op) {
	n := len(ops)
	ids, statuses, attempts := make([]string, n), make([]int16, n), make([]int64, n)
	failed, done, purge := make([]int64, n), make([]int64, n), make([]*int64, n)
	for i, o := range ops {
		f := o.(store.FinishOp)
		ids[i], statuses[i], attempts[i] = f.ID, int16(f.Status), int64(f.Attempts)
		failed[i], done[i], purge[i] = f.FailedAt, f.CompletedAt, nullZero(f.PurgeAt)
	}
	b.Queue(`UPDATE jobs SET status = u.status, attempts = u.attempts, failed_at = u.failed,
			completed_at = u.done, purge_at = u.purge
		FROM unnest($1::text[], $2::int2[], $3::int8[], $4::int8[], $5::int8[], $6::int8[])
			AS u(id, status, attempts, failed, done, purge)
		WHERE jobs.id = u.id AND jobs.id = ANY($1)`, ids, statuses, attempts, failed, done, purge)
}

func queuePatches(b *pgx.Batch, ops []store.Op) {
	var (
		ids              []string
		queues           [][]byte
		priorities       []int32
		statuses         []int16
		ready            []int64
		retry, base, jit []*int64
		exp              []*float64
		retC, retD       []*int64
	)
	for _, o := range ops {
		p := o.(store.PatchJobOp).Patch
		r, e, bs, j, rc, rd := overrideCols(p.RetryLimit, p.Backoff, p.Retention)
		ids, queues, priorities = append(ids, p.ID), append(queues, []byte(p.Queue)), append(priorities, int32(p.Priority))
		statuses, ready = append(statuses, int16(p.Status)), append(ready, p.ReadyAt)
		retry, exp, base, jit, retC, retD = append(retry, r), append(exp, e), append(base, bs), append(jit, j), append(retC, rc), append(retD, rd)
	}
	b.Queue(`UPDATE jobs SET queue = u.queue, priority = u.priority, status = u.status, ready_at = u.ready,
			retry_limit = u.retry, backoff_exponent = u.exp, backoff_base_ms = u.base,
			backoff_jitter_ms = u.jitter, retention_completed_ms = u.ret_c, retention_dead_ms = u.ret_d
		FROM unnest($1::text[], $2::bytea[], $3::int4[], $4::int2[], $5::int8[], $6::int8[], $7::float8[],
			$8::int8[], $9::int8[], $10::int8[], $11::int8[])
			AS u(id, queue, priority, status, ready, retry, exp, base, jitter, ret_c, ret_d)
		WHERE jobs.id = u.id AND jobs.id = ANY($1)`, ids, queues, priorities, statuses, ready, retry, exp, base, jit, retC, retD)
}

func queueRebinds(b *pgx.Batch, ops []store.Op) {
	ids, budgets := make([]string, len(ops)), make([]*string, len(ops))
	for i, o := range ops {
		s := o.(store.SetBudgetsOp)
		ids[i], budgets[i] = s.ID, bindingsCol(s.Budgets)
	}
	b.Queue(`UPDATE jobs SET budgets = u.budgets FROM unnest($1::text[], $2::text[]) AS u(id, budgets)
		WHERE jobs.id = u.id AND jobs.id = ANY($1)`, ids, budgets)
}

// queuePayloads replaces the payloads of a phase's SetPayload ops (a batch
// fold); an empty one is NULL.
func queuePayloads(b *pgx.Batch, ops []store.Op) {
	ids, payloads := make([]string, len(ops)), make([][]byte, len(ops))
	for i, o := range ops {
		s := o.(store.SetPayloadOp)
		ids[i] = s.ID
		if len(s.Payload) > 0 {
			payloads[i] = s.Payload
		}
	}
	b.Queue(`UPDATE jobs SET payload = u.payload FROM unnest($1::text[], $2::bytea[]) AS u(id, payload)
		WHERE jobs.id = u.id AND jobs.id = ANY($1)`, ids, payloads)
}

// queueCloseBatches closes the batches of a phase's CloseBatch ops; a row
// already closed is not written again.
func queueCloseBatches(b *pgx.Batch, ops []store.Op) {
	ids := make([]string, len(ops))
	for i, o := range ops {
		ids[i] = o.(store.CloseBatchOp).ID
	}
	b.Queue(`UPDATE jobs SET batch_open = false WHERE id = ANY($1) AND batch_open`, ids)
}

// queueClearStartBys clears the start_by of a phase's ClearStartBy ops; a
// row without one is not written.
func queueClearStartBys(b *pgx.Batch, ops []store.Op) {
	ids := make([]string, len(ops))
	for i, o := range ops {
		ids[i] = o.(store.ClearStartByOp).ID
	}
	b.Queue(`UPDATE jobs SET start_by = NULL WHERE id = ANY($1) AND start_by IS NOT NULL`, ids)
}

// queueHolder makes a job its key's holder (taking the key from the
// previous one) or lets its key go.
func queueHolder(b *pgx.Batch, u store.UniqueHolderOp) {
	if !u.Holds {
		b.Queue(`UPDATE jobs SET unique_holder = NULL WHERE id = $1 AND unique_holder`, u.ID)
		return
	}
	b.Queue(`UPDATE jobs SET unique_holder = NULL
		WHERE unique_holder AND id <> $1 AND unique_key = (SELECT unique_key FROM jobs WHERE id = $1)`, u.ID)
	b.Queue(`UPDATE jobs SET unique_holder = true WHERE id = $1 AND unique_key IS NOT NULL`, u.ID)
}

func queueErrors(b *pgx.Batch, ops []store.Op) {
	n := len(ops)
	ids, attempts := make([]string, n), make([]int64, n)
	msgs, types, traces := make([][]byte, n), make([][]byte, n), make([][]byte, n)
	dequeued, failed := make([]int64, n), make([]int64, n)
	for i, o := range ops {
		r := o.(store.AddErrorOp).Record
		ids[i], attempts[i] = r.JobID, int64(r.Attempt)
		msgs[i], types[i], traces[i] = nonNil(r.Message), nonNil(r.ErrorType), nonNil(r.Backtrace)
		dequeued[i], failed[i] = r.DequeuedAt, r.FailedAt
	}
	// Only for jobs that exist, so that no record outlives its job.
	b.Queue(`INSERT INTO job_errors (job_id, attempt, message, error_type, backtrace, dequeued_at, failed_at)
		SELECT u.* FROM unnest($1::text[], $2::int8[], $3::bytea[], $4::bytea[], $5::bytea[], $6::int8[], $7::int8[])
			AS u(job_id, attempt, message, error_type, backtrace, dequeued_at, failed_at)
		WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.id = u.job_id)
		ON CONFLICT (job_id, attempt) DO UPDATE SET message = excluded.message,
			error_type = excluded.error_type, backtrace = excluded.backtrace,
			dequeued_at = excluded.dequeued_at, failed_at = excluded.failed_at`,
		ids, attempts, msgs, types, traces, dequeued, failed)
}

func queueDeletes(b *pgx.Batch, ops []store.Op) {
	ids := make([]string, len(ops))
	for i, o := range ops {
		ids[i] = o.(store.DeleteJobOp).ID
	}
	b.Queue(`DELETE FROM jobs WHERE id = ANY($1)`, ids)
	b.Queue(`DELETE FROM job_errors WHERE job_id = ANY($1)`, ids)
}

// queueMisc queues one budget or cron op.
func queueMisc(b *pgx.Batch, op store.Op) {
	switch o := op.(type) {
	case store.PutBudgetOp:
		queuePutBudget(b, &o.Budget)
	case store.SpendBudgetOp:
		b.Queue(`UPDATE budgets SET spent_ends_at = $2, spent_used = $3 WHERE key = $1`,
			[]byte(o.Key), o.Spent.EndsAt, o.Spent.Used)
	case store.DeleteBudgetOp:
		b.Queue(`DELETE FROM budgets WHERE key = $1`, []byte(o.Key))
	default:
		queueCron(b, op)
	}
}

// queuePutBudget writes every field of a budget's configuration: a
// replacement without a template or a pause clears them. The template's
// columns are NULL for a plain budget, paused_until for a pause without
// end, sub_pauses when no sub-budget is paused, reset and timezone when not
// a calendar budget (or in UTC), key_overrides when the family has none.
// spent_* are not configuration: a
// replacement keeps them (see store.PutBudget), a new row has them NULL.
func queuePutBudget(b *pgx.Batch, g *store.Budget) {
	var alloc, duration, burst *int64
	var strategy *string
	if t := g.PerKey; t != nil {
		alloc, strategy, duration, burst = &t.Allocation, &t.Strategy, &t.DurationMs, &t.Burst
	}
	b.Queue(`INSERT INTO budgets (key, allocation, strategy, duration_ms, burst, created_at, updated_at,
			per_key_allocation, per_key_strategy, per_key_duration_ms, per_key_burst, paused, paused_until, sub_pauses,
			reset, timezone, key_overrides, adaptive)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		ON CONFLICT (key) DO UPDATE SET allocation = excluded.allocation, strategy = excluded.strategy,
			duration_ms = excluded.duration_ms, burst = excluded.burst,
			created_at = excluded.created_at, updated_at = excluded.updated_at,
			per_key_allocation = excluded.per_key_allocation, per_key_strategy = excluded.per_key_strategy,
			per_key_duration_ms = excluded.per_key_duration_ms, per_key_burst = excluded.per_key_burst,
			paused = excluded.paused, paused_until = excluded.paused_until, sub_pauses = excluded.sub_pauses,
			reset = excluded.reset, timezone = excluded.timezone, key_overrides = excluded.key_overrides,
			adaptive = excluded.adaptive`,
		[]byte(g.Key), g.Allocation, g.Strategy, g.DurationMs, g.Burst, g.CreatedAt, g.UpdatedAt,
		alloc, strategy, duration, burst, g.Paused, nullZero(g.PausedUntil), store.EncodeSubPauses(g.SubPauses),
		nullEmpty(g.Reset), nullEmpty(g.Timezone), store.EncodeKeys(g.Keys), store.EncodeAdaptive(g.Adaptive))
}

// overrideCols returns the column values of a job's overrides, nil for
// each one unset.
func overrideCols(limit *uint32, bo *store.Backoff, ret *store.Retention) (retry *int64, exp *float64, base, jitter, retC, retD *int64) {
	if limit != nil {
		retry = ptr(int64(*limit))
	}
	if bo != nil {
		exp, base, jitter = ptr(float64(bo.Exponent)), ptr(int64(bo.BaseMs)), ptr(int64(bo.JitterMs))
	}
	if ret != nil {
		// uint64 milliseconds are stored bit for bit in a bigint.
		if ret.CompletedMs != nil {
			retC = ptr(int64(*ret.CompletedMs))
		}
		if ret.DeadMs != nil {
			retD = ptr(int64(*ret.DeadMs))
		}
	}
	return retry, exp, base, jitter, retC, retD
}

func ptr[T any](v T) *T { return &v }

// nullZero maps 0 ("unset") to NULL.
func nullZero(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// bindingsCol is the stored form of a job's bindings, NULL when none.
func bindingsCol(bs []store.Binding) *string {
	if len(bs) == 0 {
		return nil
	}
	s := bindtext.Encode(bs)
	return &s
}

// nonNil keeps a NOT NULL bytea column from receiving NULL.
func nonNil(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return []byte(s)
}
