package sqlite

import (
	"context"
	"time"

	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/groupcommit"
)

// group is one appended group of the writer's ops, and its store.Pending.
type group = groupcommit.Group[op]

// Append queues ops to be committed, in one transaction, after every group
// appended before. It never blocks (the queue is unbounded) and is safe for
// concurrent use. A group is never split across transactions, however large.
// A group holding an op this store does not know fails at once, alone.
func (db *DB) Append(ops ...store.Op) store.Pending {
	g, err := db.newGroup(ops)
	if err != nil {
		return groupcommit.Failed[op](err)
	}
	return db.q.Enqueue(g)
}

// newGroup converts ops to the writer's form and picks the group's commit
// mode: the enqueue mode if it inserts a job.
func (db *DB) newGroup(ops []store.Op) (*group, error) {
	g := &group{Ops: make([]op, len(ops)), Mode: db.opts.DefaultMode}
	for i, o := range ops {
		var err error
		if g.Ops[i], err = toOp(o); err != nil {
			return nil, err
		}
		if g.Ops[i].kind == opInsertJob {
			g.Mode = db.opts.EnqueueMode
		}
	}
	return g, nil
}

// Barrier returns once every group appended before the call has committed
// or failed (failures are reported to each group's Pending, not here), and
// every dispatch mark appended before it is written: a flush joins the
// queue unless nothing is queued or held.
func (db *DB) Barrier(ctx context.Context) error {
	if db.q.Settled() && db.held.count.Load() == 0 {
		return nil
	}
	flush := db.q.Enqueue(&group{Ops: []op{{kind: opFlushMarks}}, Mode: db.opts.DefaultMode})
	return flush.Settle(ctx)
}

// QueueDepth returns how many appended groups have not finished yet.
func (db *DB) QueueDepth() int { return db.q.Depth() }

// writerWork is the writer's side of the queue (groupcommit.Backend): its
// transactions, the held marks and the storage care around them.
type writerWork struct{ db *DB }

// run is the writer goroutine: the queue's writer, once a test's start
// gate opens.
func (db *DB) run() {
	if db.opts.startGate != nil {
		<-db.opts.startGate
	}
	db.q.Run()
}

func (w writerWork) Commit(batch []*group) store.CommitInfo {
	start := time.Now()
	w.db.commit(batch)
	return w.db.noteCommit(batch, time.Since(start))
}

func (w writerWork) Committed(info store.CommitInfo) {
	if w.db.opts.OnCommit != nil {
		w.db.opts.OnCommit(info)
	}
	w.db.maintain(w.db.now())
	w.db.ckpt.wrote()
	w.db.restartWAL()
}

// Idle waits for wake, doing storage care meanwhile.
func (w writerWork) Idle(wake <-chan struct{}) { w.db.idle(wake) }

// BeforeTask writes the held marks: a backup holds them, a compaction
// need not wait for them.
func (w writerWork) BeforeTask() { w.db.flushMarks() }

func (w writerWork) Drained() {
	w.db.flushMarks()
	w.db.finalMaintenance()
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
				batch[i].Err = e
				err = e
			}
		}
	} else if err != nil {
		batch[0].Err = err
	}
	if err != nil {
		// Logged here because nobody waits for some groups (status marks).
		failed := 0
		for _, p := range batch {
			if p.Err != nil {
				failed++
			}
		}
		db.log.Warn("store write failed", "groups", failed, "err", err)
	}
}
