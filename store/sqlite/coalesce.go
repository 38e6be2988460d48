package sqlite

import (
	"fmt"

	"github.com/zizq/zizq/store"
)

// opKind says what an op does, for coalescing and for the writer.
type opKind uint8

const (
	opNone opKind = iota // an op coalesced away
	opInsertJob
	opPutJob
	opSetStatus
	opRetry
	opFinish
	opPatchJob
	opSetBudgets
	opSetPayload
	opCloseBatch
	opClearStartBy
	opUniqueHolder
	opDeleteJob
	opAddError
	opPutBudget
	opSpendBudget
	opDeleteBudget
	opDeleteEverything
	opRecoverInFlight
	// opCron is any op on cron groups and entries: it touches no job, so
	// nothing is coalesced with it.
	opCron
	// opFlushMarks writes every held dispatch mark first (lazy.go); it
	// does nothing itself.
	opFlushMarks
	// opProbeNew stands for an InsertJob that coalescing removed together
	// with a later DeleteJob: it fails, as the insert would have, if the
	// job already exists.
	opProbeNew
)

// op is the writer's form of a store.Op: what it does and the job it is
// about, beside the op itself.
type op struct {
	kind  opKind
	id    string   // job ID, or budget key for budget ops
	src   store.Op // nil for opRecoverInFlight
	count *int64   // opRecoverInFlight: rows changed
}

// toOp classifies a store.Op; an op this backend does not know is an error.
func toOp(o store.Op) (op, error) {
	switch o := o.(type) {
	case store.InsertJobOp:
		return op{kind: opInsertJob, id: o.Job.ID, src: o}, nil
	case store.PutJobOp:
		return op{kind: opPutJob, id: o.Job.ID, src: o}, nil
	case store.SetStatusOp:
		return op{kind: opSetStatus, id: o.ID, src: o}, nil
	case store.RetryOp:
		return op{kind: opRetry, id: o.ID, src: o}, nil
	case store.FinishOp:
		return op{kind: opFinish, id: o.ID, src: o}, nil
	case store.PatchJobOp:
		return op{kind: opPatchJob, id: o.Patch.ID, src: o}, nil
	case store.SetBudgetsOp:
		return op{kind: opSetBudgets, id: o.ID, src: o}, nil
	case store.SetPayloadOp:
		return op{kind: opSetPayload, id: o.ID, src: o}, nil
	case store.CloseBatchOp:
		return op{kind: opCloseBatch, id: o.ID, src: o}, nil
	case store.ClearStartByOp:
		return op{kind: opClearStartBy, id: o.ID, src: o}, nil
	case store.UniqueHolderOp:
		return op{kind: opUniqueHolder, id: o.ID, src: o}, nil
	case store.DeleteJobOp:
		return op{kind: opDeleteJob, id: o.ID, src: o}, nil
	case store.AddErrorOp:
		return op{kind: opAddError, id: o.Record.JobID, src: o}, nil
	case store.PutBudgetOp:
		return op{kind: opPutBudget, id: o.Budget.Key, src: o}, nil
	case store.SpendBudgetOp:
		return op{kind: opSpendBudget, id: o.Key, src: o}, nil
	case store.DeleteBudgetOp:
		return op{kind: opDeleteBudget, id: o.Key, src: o}, nil
	case store.DeleteEverythingOp:
		return op{kind: opDeleteEverything, src: o}, nil
	case store.PutCronGroupOp, store.DeleteCronGroupOp, store.DeleteCronGroupsOp,
		store.PutCronEntryOp, store.DeleteCronEntryOp, store.CronFiredOp:
		return op{kind: opCron, src: o}, nil
	}
	return op{}, fmt.Errorf("unknown store op %T", o)
}

// recoverInFlight returns every in-flight job to ready, storing the count.
func recoverInFlight(n *int64) op { return op{kind: opRecoverInFlight, count: n} }

// coalesce returns the ops of groups, in order, with work that cannot change
// the outcome of the transaction removed:
//
//   - An InsertJob followed by a DeleteJob of the same ID leaves no trace, so
//     both go, with every op on that ID between them (PutJob and the
//     partial updates change an existing row only, AddError inserts only
//     for an existing job, a unique key holder change only touches the
//     other holder of the job's key when the row exists: none of them can
//     fail or leave anything behind once the row is gone). The insert
//     becomes a probe that fails if the job already exists, because then
//     the insert would have failed the transaction. The insert of a job
//     with a unique key stays: it takes the key from its previous holder,
//     which the delete does not give back.
//
//   - A partial update (SetStatus, Retry, Finish, PatchJob, SetBudgets,
//     CloseBatch, ClearStartBy) after an InsertJob or PutJob of the same ID, with nothing
//     between them that removes the row, is folded into a copy of that op:
//     writing the row once with the final fields is the same as writing it
//     and then updating it. SetPayload is folded the same way into an
//     InsertJob (a PutJob does not write the payload). The groups' own ops
//     are never changed, so a retry of each group on its own sees them as
//     appended.
//
//   - A partial update or error record of a job whose DeleteJob follows
//     in the same transaction is dropped: the delete removes what it
//     wrote. This is the common case of a busy server, where a job's
//     in-flight mark and its acknowledgement meet in one commit.
//
// DeleteEverything and RecoverInFlight touch every row, so nothing is
// coalesced across them. Ops before and after them are still coalesced.
func coalesce(groups []*group) []op {
	n := 0
	for _, g := range groups {
		n += len(g.Ops)
	}
	out := make([]op, 0, n)
	if n <= 1 {
		for _, g := range groups {
			out = append(out, g.Ops...)
		}
		return out
	}

	// rows: job ID -> index in out of the last InsertJob/PutJob writing its
	// row, while nothing after it has removed the row.
	rows := make(map[string]int)
	// open: job ID -> indices in out of its InsertJob and of every later
	// op on the same ID, while no DeleteJob has closed the insert.
	open := make(map[string][]int)
	// doomed: job ID -> indices in out of its partial updates and error
	// records, which a later DeleteJob of the job drops.
	doomed := make(map[string][]int)

	for _, g := range groups {
		for _, o := range g.Ops {
			k := len(out)
			switch o.kind {
			case opInsertJob:
				if _, dup := open[o.id]; dup {
					// The second insert fails the transaction: keep it,
					// and stop coalescing the first.
					delete(open, o.id)
				} else if o.src.(store.InsertJobOp).Job.UniqueKey == "" {
					open[o.id] = []int{k}
				}
				rows[o.id] = k
			case opPutJob:
				if idx, ok := open[o.id]; ok {
					open[o.id] = append(idx, k)
				}
				rows[o.id] = k
			case opSetStatus, opRetry, opFinish, opPatchJob, opSetBudgets, opCloseBatch, opClearStartBy:
				if r, ok := rows[o.id]; ok {
					out[r].src = fold(out[r].src, o.src)
					continue
				}
				if idx, ok := open[o.id]; ok {
					open[o.id] = append(idx, k)
				}
				doomed[o.id] = append(doomed[o.id], k)
			case opSetPayload:
				if r, ok := rows[o.id]; ok && out[r].kind == opInsertJob {
					out[r].src = fold(out[r].src, o.src)
					continue
				}
				if idx, ok := open[o.id]; ok {
					open[o.id] = append(idx, k)
				}
				doomed[o.id] = append(doomed[o.id], k)
			case opAddError:
				if idx, ok := open[o.id]; ok {
					open[o.id] = append(idx, k)
				}
				doomed[o.id] = append(doomed[o.id], k)
			case opUniqueHolder:
				if idx, ok := open[o.id]; ok {
					open[o.id] = append(idx, k)
				}
			case opDeleteJob:
				delete(rows, o.id)
				for _, i := range doomed[o.id] {
					out[i].kind = opNone
				}
				delete(doomed, o.id)
				if idx, ok := open[o.id]; ok {
					delete(open, o.id)
					out[idx[0]].kind = opProbeNew
					for _, i := range idx[1:] {
						out[i].kind = opNone
					}
					continue
				}
			case opDeleteEverything, opRecoverInFlight:
				clear(rows)
				clear(open)
				clear(doomed)
			}
			out = append(out, o)
		}
	}
	return out
}

// fold returns the row write row (an InsertJobOp or PutJobOp) with the
// partial update upd applied. row is a value: the job it holds is a copy,
// so neither the caller's job nor the group's op changes.
func fold(row, upd store.Op) store.Op {
	switch r := row.(type) {
	case store.InsertJobOp:
		update(&r.Job, upd)
		return r
	case store.PutJobOp:
		update(&r.Job, upd)
		return r
	}
	panic(fmt.Sprintf("fold into %T", row)) // rows holds only row writes
}

// update applies a partial update to j as the writer's SQL applies it to
// the row (tx.go).
func update(j *store.Job, upd store.Op) {
	switch u := upd.(type) {
	case store.SetStatusOp:
		j.Status = u.Status
		if u.DequeuedAt != 0 {
			j.DequeuedAt = u.DequeuedAt
		}
	case store.RetryOp:
		j.Attempts, j.FailedAt, j.ReadyAt, j.Status = u.Attempts, u.FailedAt, u.ReadyAt, u.Status
	case store.FinishOp:
		j.Status, j.Attempts, j.FailedAt, j.CompletedAt, j.PurgeAt = u.Status, u.Attempts, u.FailedAt, u.CompletedAt, u.PurgeAt
	case store.PatchJobOp:
		p := &u.Patch
		j.Queue, j.Priority, j.Status, j.ReadyAt = p.Queue, p.Priority, p.Status, p.ReadyAt
		j.RetryLimit, j.Backoff, j.Retention = p.RetryLimit, p.Backoff, p.Retention
	case store.SetBudgetsOp:
		j.Budgets = u.Budgets
	case store.CloseBatchOp:
		j.BatchOpen = false
	case store.ClearStartByOp:
		j.StartBy = 0
	case store.SetPayloadOp:
		j.Payload = u.Payload
	default:
		panic(fmt.Sprintf("fold %T", upd)) // coalesce folds only the cases above
	}
}
