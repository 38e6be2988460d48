package sqlite

import (
	"database/sql"
	"encoding/json"

	"github.com/zizq/zizq/store"
)

// Runs: a take stream marks its jobs in flight one group each, and a batch
// of acks deletes its jobs together, so a transaction holds long runs of
// one kind of op. Each statement execution costs several calls into
// SQLite beside the B-tree work, so a run is applied by one statement that
// reads its job IDs from a JSON array (json_each), not one per op.

// minRun is the shortest run worth one statement over a JSON array.
const minRun = 4

// runStmts are the writer's statements for runs.
type runStmts struct {
	deleteJobs, deletePayloads, deleteErrors *sql.Stmt
	setStatuses                              *sql.Stmt
}

func (r *runStmts) list() []stmtSQL {
	const ids = `(SELECT value FROM json_each(?1))`
	return []stmtSQL{
		{&r.deleteJobs, `DELETE FROM jobs WHERE id IN ` + ids},
		{&r.deletePayloads, `DELETE FROM job_payloads WHERE id IN ` + ids},
		{&r.deleteErrors, `DELETE FROM job_errors WHERE job_id IN ` + ids},
		{&r.setStatuses, `UPDATE jobs SET status = ?2, dequeued_at = iif(?3 = 0, dequeued_at, ?3)
			WHERE id IN ` + ids},
	}
}

func (r *runStmts) all() []*sql.Stmt {
	return []*sql.Stmt{r.deleteJobs, r.deletePayloads, r.deleteErrors, r.setStatuses}
}

// runLength returns how many ops from the start of ops form a run that
// applyRun takes (ops coalesced away included), or 0.
func runLength(ops []op) int {
	kind := ops[0].kind
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

// applyRun applies a run found by runLength.
func (w *writer) applyRun(ops []op) error {
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
	for _, st := range []*sql.Stmt{w.runs.deleteJobs, w.runs.deletePayloads, w.runs.deleteErrors} {
		if _, err := st.Exec(arg); err != nil {
			return wrapOp("delete job", ops[0].id, err)
		}
	}
	return nil
}
