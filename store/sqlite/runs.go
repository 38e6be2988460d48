package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/zizq/zizq/store"
)

// Runs: a take stream marks its jobs in flight one group each, and a batch
// of acks deletes its jobs together, so a transaction holds long runs of
// one kind of op. Each statement execution costs several calls into
// SQLite beside the B-tree work, so a run is applied by one statement that
// reads its job IDs from a JSON array (json_each), not one per op.

// minRun is the shortest run worth one statement over a JSON array.
const minRun = 4

// insertChunk is how many rows one multi-row INSERT of a run of new jobs
// writes (9 values a job row, 2 a payload row: far below SQLite's limit
// of 32,766 bound values).
const insertChunk = 32

// runStmts are the writer's statements for runs.
type runStmts struct {
	deleteJobs, setStatuses *sql.Stmt
	// insertJobs and insertPayloads write insertChunk plain new jobs;
	// insertAlike writes insertChunk of them that differ only in their IDs
	// (sharedColumns), binding the shared values once.
	insertJobs, insertAlike, insertPayloads *sql.Stmt
}

func (r *runStmts) list() []stmtSQL {
	const ids = `(SELECT value FROM json_each(?1))`
	return []stmtSQL{
		// The triggers of jobs delete the payloads and error records.
		{&r.deleteJobs, `DELETE FROM jobs WHERE id IN ` + ids},
		{&r.setStatuses, `UPDATE jobs SET status = ?2, dequeued_at = iif(?3 = 0, dequeued_at, ?3)
			WHERE id IN ` + ids},
		{&r.insertJobs, `INSERT INTO jobs (id, queue, type, priority, status, ready_at, attempts, budgets, fair_tag)
			VALUES ` + placeholders(insertChunk, 9)},
		{&r.insertAlike, `INSERT INTO jobs (id, ` + sharedColumns + `) VALUES ` + alikeRows(insertChunk, strings.Count(sharedColumns, ",")+1)},
		{&r.insertPayloads, `INSERT INTO job_payloads (id, payload) VALUES ` + placeholders(insertChunk, 2)},
	}
}

// sharedColumns are the columns a bulk's jobs usually have in common: one
// queue, type and priority, ready now, never attempted, without bindings
// or fair tag (those columns are left NULL). A chunk of such jobs binds
// them once rather than once a row: binding a value costs about as much
// as SQLite's writing it.
const sharedColumns = `queue, type, priority, status, ready_at, attempts`

// alikeRows returns "(?1, ?33, ?34, ...), (?2, ?33, ?34, ...)…": rows whose
// first value is their own and whose other n are the shared ones bound
// after every row's own.
func alikeRows(rows, n int) string {
	shared := ""
	for i := range n {
		shared += fmt.Sprintf(", ?%d", rows+1+i)
	}
	out := make([]string, rows)
	for i := range out {
		out[i] = fmt.Sprintf("(?%d%s)", i+1, shared)
	}
	return strings.Join(out, ", ")
}

// alike reports whether the jobs of a chunk share sharedColumns' values
// and have no bindings and no fair tag.
func alike(chunk []op) bool {
	first := chunk[0].src.(store.InsertJobOp).Job
	for i := range chunk {
		j := chunk[i].src.(store.InsertJobOp).Job
		if len(j.Budgets) > 0 || j.FairTag != 0 || j.Queue != first.Queue || j.Type != first.Type ||
			j.Priority != first.Priority || j.Status != first.Status || j.ReadyAt != first.ReadyAt ||
			j.Attempts != first.Attempts {
			return false
		}
	}
	return true
}

// placeholders returns "(?, ?), (?, ?)…": rows of n values.
func placeholders(rows, n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", rows), ", ")
}

func (r *runStmts) all() []*sql.Stmt {
	return []*sql.Stmt{r.deleteJobs, r.setStatuses, r.insertJobs, r.insertAlike, r.insertPayloads}
}

// runLength returns how many ops from the start of ops form a run that
// applyRun takes (ops coalesced away included), or 0.
func runLength(ops []op) int {
	kind := ops[0].kind
	if kind == opInsertJob {
		return insertRunLength(ops)
	}
	if kind != opDeleteJob && kind != opSetStatus {
		return 0
	}
	n, real := 0, 0
	for ; n < len(ops); n++ {
		if ops[n].kind == opNone {
			continue
		}
		if ops[n].kind != kind || kind == opSetStatus && !sameMark(ops[0], ops[n]) {
			break
		}
		real++
	}
	if real < minRun {
		return 0
	}
	return n
}

// sameMark reports whether two SetStatus ops set the same fields.
func sameMark(a, b op) bool {
	x, y := a.src.(store.SetStatusOp), b.src.(store.SetStatusOp)
	return x.Status == y.Status && x.DequeuedAt == y.DequeuedAt
}

// insertRunLength returns the length of the run of plain new jobs
// (plainInsert) at the start of ops, if it fills at least one chunk.
func insertRunLength(ops []op) int {
	n := 0
	for n < len(ops) && plainInsert(&ops[n]) {
		n++
	}
	if n < insertChunk {
		return 0
	}
	return n
}

// plainInsert reports whether o inserts a job of the columns insertPlain
// writes, so that it can share a multi-row INSERT.
func plainInsert(o *op) bool {
	if o.kind != opInsertJob {
		return false
	}
	ins := o.src.(store.InsertJobOp)
	return ins.Job.Plain()
}

// insertRun writes a run of plain new jobs insertChunk rows a statement,
// the rest one by one. A chunk that fails is written again one row at a
// time (SQLite undid the failed statement alone), so that the error names
// its job.
func (w *writer) insertRun(ops []op) error {
	var args, payloads []any
	for len(ops) >= insertChunk {
		chunk := ops[:insertChunk]
		ops = ops[insertChunk:]
		stmt, args := w.chunkInsert(chunk, args[:0])
		payloads = payloads[:0]
		if _, err := stmt.Exec(args...); err != nil {
			if err := w.applyEach(chunk); err != nil {
				return err
			}
			continue
		}
		for i := range chunk {
			if ins := chunk[i].src.(store.InsertJobOp); len(ins.Job.Payload) > 0 {
				payloads = append(payloads, ins.Job.ID, ins.Job.Payload)
			}
		}
		if err := w.insertPayloads(payloads); err != nil {
			return err
		}
	}
	return w.applyEach(ops)
}

// chunkInsert returns the statement that writes a chunk's job rows and
// its arguments, appended to args.
func (w *writer) chunkInsert(chunk []op, args []any) (*sql.Stmt, []any) {
	if alike(chunk) {
		for i := range chunk {
			args = append(args, chunk[i].id)
		}
		j := chunk[0].src.(store.InsertJobOp).Job
		args = append(args, j.Queue, j.Type, int64(j.Priority), int64(j.Status), j.ReadyAt, int64(j.Attempts))
		return w.runs.insertAlike, args
	}
	for i := range chunk {
		ins := chunk[i].src.(store.InsertJobOp)
		j := &ins.Job
		args = append(args, j.ID, j.Queue, j.Type, int64(j.Priority), int64(j.Status), j.ReadyAt,
			int64(j.Attempts), bindingsArg(j.Budgets), nullZero(j.FairTag))
	}
	return w.runs.insertJobs, args
}

// insertPayloads writes the (id, payload) pairs of new jobs.
func (w *writer) insertPayloads(pairs []any) error {
	for len(pairs) > 0 {
		var err error
		if len(pairs) == 2*insertChunk {
			_, err = w.runs.insertPayloads.Exec(pairs...)
			pairs = nil
		} else {
			_, err = w.insertPayload.Exec(pairs[0], pairs[1], 0) // plain: no failed_at
			pairs = pairs[2:]
		}
		if err != nil {
			return wrapWrite("insert job payloads", err)
		}
	}
	return nil
}

// applyEach applies ops one by one.
func (w *writer) applyEach(ops []op) error {
	for i := range ops {
		if err := w.apply(&ops[i]); err != nil {
			return err
		}
	}
	return nil
}

// applyRun applies a run found by runLength.
func (w *writer) applyRun(ops []op) error {
	if ops[0].kind == opInsertJob {
		return w.insertRun(ops)
	}
	buf := make([]byte, 0, 40*len(ops))
	buf = append(buf, '[')
	kind := opNone
	for i := range ops {
		if ops[i].kind == opNone {
			continue
		}
		kind = ops[i].kind
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		b, _ := json.Marshal(ops[i].id)
		buf = append(buf, b...)
	}
	buf = append(buf, ']')
	arg := string(buf)
	if kind == opSetStatus {
		s := ops[0].src.(store.SetStatusOp)
		_, err := w.runs.setStatuses.Exec(arg, int64(s.Status), s.DequeuedAt)
		return wrapOp("set job status", ops[0].id, err)
	}
	_, err := w.runs.deleteJobs.Exec(arg)
	return wrapOp("delete job", ops[0].id, err)
}
