package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/bindtext"
	"github.com/zizq/zizq/store/internal/chunk"
	"github.com/zizq/zizq/store/internal/reads"
)

// liveColumns are a store.LiveJob in one text column. Every column of a
// row is several calls into SQLite, each taking the connection's mutex,
// and at ten million rows those calls cost more than the row itself; the
// cheap SQL that packs the job into one text saves most of them. The text
// is the 25-character id, then the byte lengths of queue and type, a
// packed integer, ready_at, fair_tag and start_by (the last two empty when
// NULL), each ended by a comma, then queue, type and the rest: the store
// takes any names, so they are counted, not split.
//
//   - The packed integer is priority, status and attempts (16, 3 and 32
//     bits; in SQLite | and << bind alike, hence the parentheses).
//   - The rest is empty for the jobs with neither bindings nor overrides;
//     the bindings' JSON alone (it starts with '['); or the overrides, ';',
//     and the bindings' JSON or nothing. The overrides are retry_limit,
//     backoff_exponent, backoff_base_ms, backoff_jitter_ms,
//     retention_completed_ms and retention_dead_ms, comma-separated, empty
//     when NULL.
const liveColumns = `id || octet_length(queue) || ',' || octet_length(type) || ',' ||
	(priority | (status << 16) | (attempts << 19)) || ',' || ready_at || ',' || ifnull(fair_tag, '') || ',' ||
	ifnull(start_by, '') || ',' || queue || type ||
	CASE WHEN retry_limit IS NULL AND backoff_exponent IS NULL AND backoff_base_ms IS NULL
		AND backoff_jitter_ms IS NULL AND retention_completed_ms IS NULL AND retention_dead_ms IS NULL
	THEN ifnull(budgets, '') ELSE ifnull(retry_limit, '') || ',' || ifnull(backoff_exponent, '') || ',' ||
		ifnull(backoff_base_ms, '') || ',' || ifnull(backoff_jitter_ms, '') || ',' ||
		ifnull(retention_completed_ms, '') || ',' || ifnull(retention_dead_ms, '') || ';' ||
		ifnull(budgets, '') END`

// commonPriority is the priority of a job enqueued without one
// (api.DefaultPriority), which most backlogs hold alone. jobs_live leaves
// it out (migration 0014), so that enqueueing and acknowledging such a job
// writes no entry there; Load walks the primary key for it instead.
const (
	commonPriority = 32768
	// commonPriorityText is commonPriority in the SQL below.
	commonPriorityText = "32768"
	// inLiveIndex is jobs_live's condition, which a query states whole
	// for SQLite to use that partial index.
	inLiveIndex = `status <= 2 AND priority <> ` + commonPriorityText
)

// The live jobs are read in (priority, id) order (TestDB_LoadPlans) in
// one of two ways for each priority:
//
//   - a walk of the primary key in id order, stepping over the rows of
//     other priorities and of finished jobs, about 0.1 µs a row;
//   - jobs_live, which holds the live jobs of every priority but
//     commonPriority, each looked up by id: one B-tree search a job, about
//     0.6 µs here.
//
// commonPriority is always walked, since no index holds its ready jobs.
// loadPlan walks the other priorities too while they are few and dense
// enough for that to cost less than the lookups; most backlogs have one or
// a few priorities, and the walks then read a million jobs in about half
// the time.
const (
	liveByPriority = `SELECT ` + liveColumns + ` FROM jobs WHERE +priority = ? AND +status <= 2 ORDER BY id`
	liveBelow      = `SELECT ` + liveColumns + ` FROM jobs WHERE ` + inLiveIndex + ` AND priority < ` + commonPriorityText + ` ORDER BY priority, id`
	liveAbove      = `SELECT ` + liveColumns + ` FROM jobs WHERE ` + inLiveIndex + ` AND priority > ` + commonPriorityText + ` ORDER BY priority, id`
	// lookupCost is the cost of a job looked up by id, in rows stepped
	// over by a walk of the primary key.
	lookupCost = 5
)

// liveCounts are what loadPlan weighs: how many jobs there are (SQLite
// counts the cells of the table's pages: no index holds every job) and
// how many are finished (counted in jobs_status).
const liveCounts = `SELECT (SELECT count(*) FROM jobs),
	(SELECT count(*) FROM jobs WHERE status >= 3 AND status <> 1)`

// otherPriorities are the distinct priorities of the live jobs in jobs_live
// (all but commonPriority), ascending, up to a limit: one search each.
const otherPriorities = `WITH RECURSIVE p(v) AS (
		SELECT min(priority) FROM jobs WHERE ` + inLiveIndex + `
		UNION ALL
		SELECT (SELECT min(priority) FROM jobs WHERE ` + inLiveIndex + ` AND priority > p.v) FROM p WHERE p.v IS NOT NULL
	) SELECT v FROM p WHERE v IS NOT NULL LIMIT ?`

// liveRead is one query of loadPlan's, and its arguments.
type liveRead struct {
	query string
	args  []any
}

// loadPlan returns the queries that read the live jobs, to run in order.
// The counts it weighs cost a pass over the table's pages (no index holds
// every job), so it reads them only when some job has another priority
// than commonPriority: otherwise the one walk is the plan.
func loadPlan(ctx context.Context, tx *sql.Tx) ([]liveRead, error) {
	// Walks cost P·all, the index lookupCost·live (live <= all): more than
	// lookupCost priorities are never all walked.
	others, err := queryPriorities(ctx, tx, lookupCost+1)
	if err != nil {
		return nil, err
	}
	walkCommon := liveRead{liveByPriority, []any{int64(commonPriority)}}
	if len(others) == 0 {
		return []liveRead{walkCommon}, nil
	}
	var all, done int64
	if err := tx.QueryRowContext(ctx, liveCounts).Scan(&all, &done); err != nil {
		return nil, err
	}
	// Walk every priority only while P stays below the break-even.
	if most := lookupCost * (all - done) / all; int64(len(others))+1 > most {
		return []liveRead{{liveBelow, nil}, walkCommon, {liveAbove, nil}}, nil
	}
	ps := append(others, commonPriority)
	slices.Sort(ps)
	reads := make([]liveRead, len(ps))
	for i, p := range ps {
		reads[i] = liveRead{liveByPriority, []any{p}}
	}
	return reads, nil
}

// queryPriorities runs otherPriorities.
func queryPriorities(ctx context.Context, tx *sql.Tx, limit int64) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, otherPriorities, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ps []int64
	for rows.Next() {
		var p int64
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, rows.Err()
}

// getJobsChunk bounds the IDs of one GetJobs query: a call with more
// issues one query per chunk.
const getJobsChunk = 1000

// Load reads what the engine needs at start from one read transaction (one
// snapshot of the WAL): budgets, the start (the greatest job ID, and
// whether the live jobs are plain), live jobs in (priority, id) order,
// unique keys, batches and the purge schedule. Each part is one query
// whose rows go to l as they are read, so the first job arrives before the
// last is read. The snapshot is taken before Start is called: what commits
// from then on is not read.
func (db *DB) Load(ctx context.Context, l store.Loader) (err error) {
	tx, err := db.rdb.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // read-only: nothing to commit
	if err := loadBudgets(ctx, tx, l.Budget); err != nil {
		return err
	}
	if err := db.loadStart(ctx, tx, l.Start); err != nil {
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
}

// liveSpecial tells whether a live job has a unique key or a batch,
// through the partial indexes that hold only such jobs.
const liveSpecial = `SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_unique WHERE unique_key IS NOT NULL AND status <= 2),
	EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_batched WHERE batch_key IS NOT NULL AND status <= 2)`

func (db *DB) loadStart(ctx context.Context, tx *sql.Tx, fn func(store.LoadStart) error) error {
	if fn == nil {
		return nil
	}
	maxID, err := db.maxJobID(ctx, tx)
	if err != nil {
		return err
	}
	var unique, batched bool
	if err := tx.QueryRowContext(ctx, liveSpecial).Scan(&unique, &batched); err != nil {
		return fmt.Errorf("load: live unique keys and batches: %w", err)
	}
	return fn(store.LoadStart{MaxID: maxID, Plain: !unique && !batched})
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
	reads, err := loadPlan(ctx, tx)
	if err != nil {
		return fmt.Errorf("load jobs: %w", err)
	}
	for _, r := range reads {
		if err := scanLiveRows(ctx, tx, fn, r.query, r.args...); err != nil {
			return err
		}
	}
	return nil
}

// scanLiveRows calls fn with each row of a query of liveColumns.
func scanLiveRows(ctx context.Context, tx *sql.Tx, fn func(store.LiveJob) error, query string, args ...any) error {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("load jobs: %w", err)
	}
	defer rows.Close()
	var (
		text  string
		binds = bindtext.Cache{}
	)
	for rows.Next() {
		if err := rows.Scan(&text); err != nil {
			return fmt.Errorf("load jobs: %w", err)
		}
		j, err := parseLive(text, binds)
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

// loadUnique reads the unique keys of the jobs that have one through the
// partial index jobs_unique, so the jobs without a key cost nothing.
func loadUnique(ctx context.Context, tx *sql.Tx, fn func(store.UniqueJob) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, unique_key, unique_while, status, unique_holder IS NOT NULL
		FROM jobs INDEXED BY jobs_unique WHERE unique_key IS NOT NULL AND (status <= 2 OR unique_holder = 1)`)
	if err != nil {
		return fmt.Errorf("load unique keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u store.UniqueJob
		var while, status int64
		if err := rows.Scan(&u.ID, &u.Key, &while, &status, &u.Holds); err != nil {
			return fmt.Errorf("load unique keys: %w", err)
		}
		u.While, u.Status = store.UniqueWhile(while), store.Status(status)
		if err := fn(u); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load unique keys: %w", err)
	}
	return nil
}

// liveBatches are the batches of the live batched jobs, by id; the
// condition "batch_key IS NOT NULL" lets SQLite use jobs_batched.
const liveBatches = `SELECT id, batch_key, batch_when, batch_fold, batch_open FROM jobs
	WHERE batch_key IS NOT NULL AND status <= 2 ORDER BY id`

// loadBatches reads the batches of the live batched jobs through
// jobs_batched, which holds the batched jobs alone.
func loadBatches(ctx context.Context, tx *sql.Tx, fn func(store.LiveBatch) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, liveBatches)
	if err != nil {
		return fmt.Errorf("load batches: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var b store.LiveBatch
		if err := rows.Scan(&b.ID, &b.Batch.Key, &b.Batch.When, &b.Batch.Fold, &b.Open); err != nil {
			return fmt.Errorf("load batches: %w", err)
		}
		if err := fn(b); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load batches: %w", err)
	}
	return nil
}

func loadPurges(ctx context.Context, tx *sql.Tx, fn func(id string, at int64) error) error {
	if fn == nil {
		return nil
	}
	rows, err := tx.QueryContext(ctx, reads.PurgesSQL)
	if err != nil {
		return fmt.Errorf("load purge schedule: %w", err)
	}
	defer rows.Close()
	return reads.Purges(rows, fn, nil)
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
	db.highWaterMu.Lock()
	committed := db.highWater
	db.highWaterMu.Unlock()
	return max(stored.String, mark.String, committed), nil
}

// GetJobs returns the jobs of ids, whole, in any order; IDs of no job are
// skipped. Each query looks up at most getJobsChunk IDs, each by primary
// key (the IDs drive a CROSS JOIN, as in withinQuery), so a batch of
// dispatched jobs costs one query.
func (db *DB) GetJobs(ctx context.Context, ids []string) ([]store.Job, error) {
	jobs, err := chunk.ByID(ids, getJobsChunk, func(out []store.Job, batch []string) ([]store.Job, error) {
		arg, _ := json.Marshal(batch) // strings: cannot fail
		return db.queryJobs(ctx, out, `WITH wanted(job_id) AS (SELECT value FROM json_each(?))
			SELECT `+jobColumns+` FROM wanted CROSS JOIN jobs ON jobs.id = wanted.job_id
			LEFT JOIN job_payloads AS p ON p.id = jobs.id`, string(arg))
	})
	if err != nil {
		return nil, fmt.Errorf("get jobs: %w", err)
	}
	return jobs, nil
}

// Payloads returns the payload and failed_at of the jobs of ids, in any
// order; IDs of no job are skipped. One query per getJobsChunk IDs reads
// job_payloads alone, which holds failed_at beside the payload: one B-tree
// search a job. Only the IDs it does not find (jobs without a payload, or
// gone) are looked up in jobs, by a second query.
func (db *DB) Payloads(ctx context.Context, ids []string) ([]store.JobPayload, error) {
	out, err := chunk.ByID(ids, getJobsChunk, func(out []store.JobPayload, batch []string) ([]store.JobPayload, error) {
		return db.queryPayloads(ctx, out, batch)
	})
	if err != nil {
		return nil, fmt.Errorf("read payloads: %w", err)
	}
	return out, nil
}

const (
	// payloadsByID reads the payload rows of a JSON array of IDs.
	payloadsByID = `WITH wanted(job_id) AS (SELECT value FROM json_each(?))
		SELECT p.id, p.failed_at, p.payload FROM wanted CROSS JOIN job_payloads AS p ON p.id = wanted.job_id`
	// failedAtByID reads, for the jobs without a payload row, the rest
	// of what Payloads returns.
	failedAtByID = `WITH wanted(job_id) AS (SELECT value FROM json_each(?))
		SELECT jobs.id, jobs.failed_at, NULL FROM wanted CROSS JOIN jobs ON jobs.id = wanted.job_id`
)

// queryPayloads appends the payloads of ids to out. The two queries are
// two snapshots: a job's answer is the one of either, as if the call had
// been made then.
func (db *DB) queryPayloads(ctx context.Context, out []store.JobPayload, ids []string) ([]store.JobPayload, error) {
	start := len(out)
	out, err := db.scanPayloads(ctx, out, payloadsByID, ids)
	if err != nil || len(out)-start == len(ids) {
		return out, err
	}
	found := make(map[string]bool, len(out)-start)
	for _, p := range out[start:] {
		found[p.ID] = true
	}
	var rest []string
	for _, id := range ids {
		if !found[id] {
			rest = append(rest, id)
		}
	}
	return db.scanPayloads(ctx, out, failedAtByID, rest)
}

// scanPayloads appends the rows of query, for the IDs of ids, to out.
func (db *DB) scanPayloads(ctx context.Context, out []store.JobPayload, query string, ids []string) ([]store.JobPayload, error) {
	arg, _ := json.Marshal(ids) // strings: cannot fail
	rows, err := db.rdb.QueryContext(ctx, query, string(arg))
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var p store.JobPayload
		if err := rows.Scan(&p.ID, &p.FailedAt, &p.Payload); err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// jobIDLen is the length of every job ID (api.JobIDLen; the store imports
// no wire package).
const jobIDLen = 25

// parseLive reads the text of liveColumns; id, queue and type share its
// memory.
func parseLive(text string, binds bindtext.Cache) (store.LiveJob, error) {
	var j store.LiveJob
	if len(text) < jobIDLen {
		return j, fmt.Errorf("live row %q: too short", text)
	}
	j.ID = text[:jobIDLen]
	var n [6]int64
	rest := text[jobIDLen:]
	for i := range n {
		var field string
		var ok bool
		if field, rest, ok = strings.Cut(rest, ","); !ok {
			return j, fmt.Errorf("job %s: live row: want %d numbers", j.ID, len(n))
		}
		if field == "" && i >= 4 {
			continue // no fair tag, no start_by: most jobs
		}
		var err error
		if n[i], err = strconv.ParseInt(field, 10, 64); err != nil {
			return j, fmt.Errorf("job %s: live row: %w", j.ID, err)
		}
	}
	qlen, tlen, packed := n[0], n[1], n[2]
	j.FairTag, j.StartBy = n[4], n[5]
	if qlen < 0 || tlen < 0 || qlen+tlen > int64(len(rest)) {
		return j, fmt.Errorf("job %s: live row: names of %d and %d bytes in %d", j.ID, qlen, tlen, len(rest))
	}
	j.Queue, j.Type, j.ReadyAt = rest[:qlen], rest[qlen:qlen+tlen], n[3]
	rest = rest[qlen+tlen:]
	j.Priority, j.Status, j.Attempts = uint16(packed), store.Status(packed>>16&7), uint32(packed>>19)
	if rest == "" {
		return j, nil
	}
	budgets := rest
	if !strings.HasPrefix(budgets, "[") {
		var overrides string
		var err error
		overrides, budgets, _ = strings.Cut(budgets, ";")
		if j.RetryLimit, j.Backoff, j.Retention, err = parseOverrides(overrides); err != nil {
			return j, fmt.Errorf("job %s: %w", j.ID, err)
		}
	}
	if budgets != "" {
		var err error
		if j.Budgets, err = binds.Decode(budgets); err != nil {
			return j, fmt.Errorf("job %s: %w", j.ID, err)
		}
	}
	return j, nil
}

// parseOverrides reads the overrides of liveColumns: six comma-separated
// values, empty for NULL.
func parseOverrides(s string) (*uint32, *store.Backoff, *store.Retention, error) {
	f := strings.Split(s, ",")
	if len(f) != 6 {
		return nil, nil, nil, fmt.Errorf("overrides %q: want 6 fields", s)
	}
	var ints [6]*int64
	var exp *float64
	for i, v := range f {
		if v == "" {
			continue
		}
		if i == 1 {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("overrides %q: %w", s, err)
			}
			exp = &x
			continue
		}
		x, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("overrides %q: %w", s, err)
		}
		ints[i] = &x
	}
	limit, bo, ret := overrides(ints[0], exp, ints[2], ints[3], ints[4], ints[5])
	return limit, bo, ret, nil
}
