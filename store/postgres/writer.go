package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/groupcommit"
)

// group is one appended group of ops, and its store.Pending. The group
// RecoverInFlight appends has no ops and a Count.
type group = groupcommit.Group[store.Op]

// Append queues ops to be committed, in one transaction, after every group
// appended before. It never blocks and is safe for concurrent use. A group
// holding an op this backend does not know fails at once, alone.
func (db *DB) Append(ops ...store.Op) store.Pending {
	g := &group{Ops: ops, Mode: db.opts.DefaultMode}
	for _, o := range ops {
		if err := checkOp(o); err != nil {
			return groupcommit.Failed[store.Op](err)
		}
		if _, ok := o.(store.InsertJobOp); ok {
			g.Mode = db.opts.EnqueueMode
		}
	}
	return db.q.Enqueue(g)
}

// Barrier returns once every group appended before the call has committed
// or failed.
func (db *DB) Barrier(ctx context.Context) error { return db.q.Barrier(ctx) }

// QueueDepth returns how many appended groups have not finished yet.
func (db *DB) QueueDepth() int { return db.q.Depth() }

// RecoverInFlight returns every in-flight job to ready and returns how many
// there were; the change has committed when it returns.
func (db *DB) RecoverInFlight(ctx context.Context) (int64, error) {
	var n int64
	g := &group{Mode: db.opts.DefaultMode, Count: &n}
	if err := db.q.Enqueue(g).Wait(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

// writerWork is the writer's side of the queue (groupcommit.Backend): its
// transactions. Nothing is done while it is idle: the lease is renewed
// elsewhere, and each transaction checks the fence itself.
type writerWork struct{ db *DB }

func (w writerWork) Commit(batch []*group) store.CommitInfo {
	start := time.Now()
	w.db.commit(batch)
	return commitInfo(batch, time.Since(start))
}

func (w writerWork) Committed(info store.CommitInfo) {
	if w.db.opts.OnCommit != nil {
		w.db.opts.OnCommit(info)
	}
}

func (writerWork) Idle(wake <-chan struct{}) { <-wake }
func (writerWork) BeforeTask()               {}
func (writerWork) Drained()                  {}

// commit runs batch in one transaction. If that fails, each group is
// retried in a transaction of its own, so that one bad group fails alone —
// unless the failure is the database's or the lease's, which every group
// would meet again.
func (db *DB) commit(batch []*group) {
	err := db.runTx(batch)
	if err == nil {
		return
	}
	if err == ErrFenced {
		db.logFenced(batch)
	}
	if len(batch) == 1 || unavailableReason(err) != "" || err == ErrFenced {
		for _, g := range batch {
			g.Err = err
		}
	} else {
		for _, g := range batch {
			if g.Err = db.runTx([]*group{g}); g.Err == ErrFenced {
				db.logFenced([]*group{g})
			}
		}
	}
	db.log.Warn("store write failed", "groups", len(batch), "err", err)
}

// fencedLogIDs bounds the job IDs a fenced write's log line names.
const fencedLogIDs = 50

// logFenced logs a transaction the fence refused: the lease of this
// store's term is lost, and nothing of it was written. The line names the
// jobs it would have written, so that a failover's history can be checked
// against what clients were told.
func (db *DB) logFenced(batch []*group) {
	ops := 0
	var ids []string
	for _, g := range batch {
		ops += len(g.Ops)
		for _, o := range g.Ops {
			if id := opJobID(o); id != "" && len(ids) < fencedLogIDs {
				ids = append(ids, id)
			}
		}
	}
	f := db.opts.Fence
	if f == nil {
		return // only a fenced store's writes are refused so
	}
	db.log.Warn("write fenced: the lease of this term is lost, nothing written",
		"term", f.Term, "holder", f.Holder, "groups", len(batch), "ops", ops, "jobs", ids)
}

// opJobID is the job an op writes, "" for an op of no single job.
func opJobID(o store.Op) string {
	switch o := o.(type) {
	case store.InsertJobOp:
		return o.Job.ID
	case store.PutJobOp:
		return o.Job.ID
	case store.SetStatusOp:
		return o.ID
	case store.RetryOp:
		return o.ID
	case store.FinishOp:
		return o.ID
	case store.DeleteJobOp:
		return o.ID
	case store.SetBudgetsOp:
		return o.ID
	case store.SetPayloadOp:
		return o.ID
	case store.UniqueHolderOp:
		return o.ID
	case store.ClearStartByOp:
		return o.ID
	}
	return ""
}

func commitInfo(batch []*group, d time.Duration) store.CommitInfo {
	info := store.CommitInfo{Groups: len(batch), Duration: d}
	for _, g := range batch {
		info.Ops += len(g.Ops)
		if g.Err != nil {
			info.Failed = true
			continue
		}
		for _, o := range g.Ops {
			if _, ok := o.(store.InsertJobOp); ok {
				info.Inserts++
			}
		}
	}
	return info
}

// checkOp fails an op this backend does not know.
func checkOp(o store.Op) error {
	switch o.(type) {
	case store.InsertJobOp, store.PutJobOp, store.SetStatusOp, store.RetryOp, store.FinishOp,
		store.PatchJobOp, store.SetBudgetsOp, store.SetPayloadOp, store.CloseBatchOp, store.ClearStartByOp,
		store.UniqueHolderOp, store.DeleteJobOp,
		store.AddErrorOp, store.PutBudgetOp, store.SpendBudgetOp, store.DeleteBudgetOp, store.DeleteEverythingOp,
		store.PutCronGroupOp, store.DeleteCronGroupOp, store.DeleteCronGroupsOp,
		store.PutCronEntryOp, store.DeleteCronEntryOp, store.CronFiredOp:
		return nil
	}
	return fmt.Errorf("unknown store op %T", o)
}
