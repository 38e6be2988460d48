package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/zizq/zizq/store"
)

// group is one appended group of ops, and its store.Pending.
type group struct {
	db   *DB
	seq  uint64 // position in append order; 0 = already finished
	ops  []store.Op
	mode store.CommitMode
	// recovered, for the group RecoverInFlight appends: rows it changed.
	recovered *int64
	// task, when set, is work that runs alone, between transactions,
	// instead of ops (compact.go).
	task func() error
	// err is written by the writer before doneSeq reaches seq, and read
	// under db.mu after that.
	err error
}

// Wait returns once the transaction holding the group has committed, with
// nil, or has failed, with its error. If ctx ends first it returns ctx's
// error; the group still commits (or fails) later.
func (p *group) Wait(ctx context.Context) error {
	if p.seq == 0 {
		return p.err
	}
	if err := p.db.waitSeq(ctx, p.seq); err != nil {
		return err
	}
	p.db.mu.Lock()
	defer p.db.mu.Unlock()
	return p.err
}

// Append queues ops to be committed, in one transaction, after every group
// appended before. It never blocks and is safe for concurrent use. A group
// holding an op this store does not know fails at once, alone.
func (db *DB) Append(ops ...store.Op) store.Pending {
	g := &group{db: db, ops: ops, mode: db.opts.DefaultMode}
	for _, o := range ops {
		if err := checkOp(o); err != nil {
			return &group{err: err}
		}
		if _, ok := o.(store.InsertJobOp); ok {
			g.mode = db.opts.EnqueueMode
		}
	}
	return db.enqueue(g)
}

// enqueue gives g its place in append order and wakes the writer.
func (db *DB) enqueue(g *group) *group {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return &group{err: errClosed}
	}
	db.lastSeq++
	g.seq = db.lastSeq
	db.queue = append(db.queue, g)
	db.mu.Unlock()
	db.signal()
	return g
}

// Barrier returns once every group appended before the call has committed
// or failed.
func (db *DB) Barrier(ctx context.Context) error {
	db.mu.Lock()
	seq := db.lastSeq
	db.mu.Unlock()
	return db.waitSeq(ctx, seq)
}

// waitSeq waits until the group seq has finished: groups finish in append
// order.
func (db *DB) waitSeq(ctx context.Context, seq uint64) error {
	for {
		db.mu.Lock()
		done, progress := db.doneSeq, db.progress
		db.mu.Unlock()
		if done >= seq {
			return nil
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// signal wakes the writer if it is idle; never blocks.
func (db *DB) signal() {
	select {
	case db.wake <- struct{}{}:
	default:
	}
}

// RecoverInFlight returns every in-flight job to ready and returns how many
// there were; the change has committed when it returns.
func (db *DB) RecoverInFlight(ctx context.Context) (int64, error) {
	var n int64
	g := &group{db: db, mode: db.opts.DefaultMode, recovered: &n}
	if err := db.enqueue(g).Wait(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

// run is the writer goroutine: it takes groups off the queue in order, as
// many as fit in BatchSize, commits them in one transaction and wakes their
// waiters. It exits when the DB is closed and the queue is drained.
func (db *DB) run() {
	defer close(db.writerDone)
	for {
		batch := db.next()
		if batch == nil {
			return
		}
		if t := batch[0].task; t != nil {
			batch[0].err = t()
			db.finish(batch)
			continue
		}
		start := time.Now()
		db.commit(batch)
		info := commitInfo(batch, time.Since(start))
		db.finish(batch)
		if db.opts.OnCommit != nil {
			db.opts.OnCommit(info)
		}
	}
}

// next blocks until groups are queued and takes the next batch (a task
// goes alone); nil once the DB is closed and nothing is left.
func (db *DB) next() []*group {
	db.mu.Lock()
	defer db.mu.Unlock()
	for len(db.queue) == 0 {
		if db.closed {
			return nil
		}
		db.mu.Unlock()
		<-db.wake
		db.mu.Lock()
	}
	n, k := len(db.queue[0].ops), 1
	for ; k < len(db.queue) && db.queue[0].task == nil; k++ {
		size := len(db.queue[k].ops)
		if n+size > db.opts.BatchSize || db.queue[k].task != nil {
			break
		}
		n += size
	}
	batch := db.queue[:k:k]
	db.queue = db.queue[k:]
	if len(db.queue) == 0 {
		db.queue = nil
	}
	return batch
}

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
			g.err = err
		}
	} else {
		for _, g := range batch {
			if g.err = db.runTx([]*group{g}); g.err == ErrFenced {
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
		ops += len(g.ops)
		for _, o := range g.ops {
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
	}
	return ""
}

// finish publishes the outcome of batch and wakes every waiter.
func (db *DB) finish(batch []*group) {
	db.mu.Lock()
	for _, g := range batch {
		g.ops = nil
	}
	db.doneSeq = batch[len(batch)-1].seq
	close(db.progress)
	db.progress = make(chan struct{})
	db.mu.Unlock()
}

func commitInfo(batch []*group, d time.Duration) store.CommitInfo {
	info := store.CommitInfo{Groups: len(batch), Duration: d}
	for _, g := range batch {
		info.Ops += len(g.ops)
		if g.err != nil {
			info.Failed = true
			continue
		}
		for _, o := range g.ops {
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
		store.PatchJobOp, store.SetBudgetsOp, store.SetPayloadOp, store.CloseBatchOp, store.UniqueHolderOp, store.DeleteJobOp,
		store.AddErrorOp, store.PutBudgetOp, store.DeleteBudgetOp, store.DeleteEverythingOp,
		store.PutCronGroupOp, store.DeleteCronGroupOp, store.DeleteCronGroupsOp,
		store.PutCronEntryOp, store.DeleteCronEntryOp, store.CronFiredOp:
		return nil
	}
	return fmt.Errorf("unknown store op %T", o)
}
