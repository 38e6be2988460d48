package sqlite

import (
	"context"
	"time"

	"github.com/zizq/zizq/store"
)

// group is one appended group of ops, and its store.Pending.
type group struct {
	db   *DB
	seq  uint64 // position in append order; 0 = already finished
	ops  []op   // released once finished
	mode store.CommitMode
	// task, when set, is work for the writer's connection that runs alone,
	// between transactions, instead of ops (compact.go).
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
// appended before. It never blocks (the queue is unbounded) and is safe for
// concurrent use. A group is never split across transactions, however large.
// A group holding an op this store does not know fails at once, alone.
func (db *DB) Append(ops ...store.Op) store.Pending {
	g, err := db.newGroup(ops)
	if err != nil {
		return &group{err: err}
	}
	return db.enqueue(g)
}

// newGroup converts ops to the writer's form and picks the group's commit
// mode: the enqueue mode if it inserts a job.
func (db *DB) newGroup(ops []store.Op) (*group, error) {
	g := &group{db: db, ops: make([]op, len(ops)), mode: db.opts.DefaultMode}
	for i, o := range ops {
		var err error
		if g.ops[i], err = toOp(o); err != nil {
			return nil, err
		}
		if g.ops[i].kind == opInsertJob {
			g.mode = db.opts.EnqueueMode
		}
	}
	return g, nil
}

// enqueue gives p its place in append order and wakes the writer.
func (db *DB) enqueue(p *group) *group {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return &group{err: errClosed}
	}
	db.lastSeq++
	p.seq = db.lastSeq
	db.queue = append(db.queue, p)
	db.mu.Unlock()
	db.signal()
	return p
}

// Barrier returns once every group appended before the call has committed
// or failed (failures are reported to each group's Pending, not here), and
// every dispatch mark appended before it is written: a flush joins the
// queue unless nothing is queued or held.
func (db *DB) Barrier(ctx context.Context) error {
	db.mu.Lock()
	seq, done := db.lastSeq, db.doneSeq
	db.mu.Unlock()
	if seq == done && db.held.count.Load() == 0 {
		return nil
	}
	flush := db.enqueue(&group{db: db, ops: []op{{kind: opFlushMarks}}, mode: db.opts.DefaultMode})
	return db.waitSeq(ctx, flush.seq)
}

// waitSeq waits until the group seq has finished. Groups finish in append
// order, so doneSeq says all there is to know.
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

// run is the writer goroutine: it takes groups off the queue in order, as
// many as fit in BatchSize, commits them in one transaction and wakes their
// waiters. It exits when the DB is closed and the queue is drained.
func (db *DB) run() {
	defer close(db.writerDone)
	if db.opts.startGate != nil {
		<-db.opts.startGate
	}
	for {
		batch := db.next()
		if batch == nil {
			db.flushMarks()
			db.finalMaintenance()
			return
		}
		if t := batch[0].task; t != nil {
			db.flushMarks() // a backup holds them, a compaction need not wait for them
			batch[0].err = t()
			db.finish(batch)
			continue
		}
		start := time.Now()
		db.commit(batch)
		info := db.noteCommit(batch, time.Since(start))
		db.finish(batch)
		if db.opts.OnCommit != nil {
			db.opts.OnCommit(info)
		}
		db.maintain(db.now())
	}
}

// next blocks until groups are queued and takes the next batch: at least
// one group, then more while their ops fit in BatchSize; a task goes
// alone. It returns nil
// when the DB is closed and nothing is left.
func (db *DB) next() []*group {
	db.mu.Lock()
	defer db.mu.Unlock()
	for len(db.queue) == 0 {
		if db.closed {
			return nil
		}
		db.mu.Unlock()
		db.idle() // waits for db.wake, doing storage care meanwhile
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
		db.queue = nil // let the old backing array go
	}
	return batch
}

// commit runs batch in one transaction. If that fails, each group is retried
// in a transaction of its own, so that one bad group fails alone and every
// Pending gets its own outcome.
func (db *DB) commit(batch []*group) {
	err := db.runTx(batch)
	if err != nil && len(batch) > 1 {
		err = nil
		for i := range batch {
			if e := db.runTx(batch[i : i+1]); e != nil {
				batch[i].err = e
				err = e
			}
		}
	} else if err != nil {
		batch[0].err = err
	}
	if err != nil {
		// Logged here because nobody waits for some groups (status marks).
		failed := 0
		for _, p := range batch {
			if p.err != nil {
				failed++
			}
		}
		db.log.Warn("store write failed", "groups", failed, "err", err)
	}
}

// finish publishes the outcome of batch and wakes every waiter.
func (db *DB) finish(batch []*group) {
	db.mu.Lock()
	for _, p := range batch {
		p.ops = nil
	}
	db.doneSeq = batch[len(batch)-1].seq
	db.highWater = db.maint.highWater
	close(db.progress)
	db.progress = make(chan struct{})
	db.mu.Unlock()
}
