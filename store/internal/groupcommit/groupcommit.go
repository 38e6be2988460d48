// Package groupcommit is the write queue both stores share: groups of ops
// are appended in order, never blocking, and one writer goroutine takes
// them off in that order, as many as fit in a batch, and commits each
// batch in one transaction. Each group is its caller's store.Pending.
//
// The backend supplies what differs: how a batch commits (its transaction
// and the fallbacks when that fails), what the writer does while the queue
// is empty, and what happens around a task (work for the writer's
// connection that runs alone, between transactions).
package groupcommit

import (
	"context"
	"sync"

	"github.com/zizq/zizq/store"
)

// Group is one appended group of ops of type O, and its store.Pending.
// The backend fills Ops, Mode, Task and Count before Enqueue; its Commit
// sets Err.
type Group[O any] struct {
	q   *Queue[O]
	seq uint64 // position in append order; 0 = already finished
	// Ops are committed together, never split across transactions. They
	// are released once the group has finished.
	Ops  []O
	Mode store.CommitMode
	// Task, when set, is work that runs alone, between transactions,
	// instead of Ops.
	Task func() error
	// Count, when set, receives the rows the group changed, for a backend
	// that counts them on the group (PostgreSQL's RecoverInFlight).
	Count *int64
	// Err is the group's outcome: written by the writer before the queue's
	// done mark reaches the group, and read under the queue's lock after.
	Err error
}

// Failed returns a Pending that has already failed with err.
func Failed[O any](err error) *Group[O] {
	return &Group[O]{Err: err}
}

// Wait returns once the transaction holding the group has committed, with
// nil, or has failed, with its error. If ctx ends first it returns ctx's
// error; the group still commits (or fails) later.
func (g *Group[O]) Wait(ctx context.Context) error {
	if g.seq == 0 {
		return g.Err
	}
	if err := g.q.waitSeq(ctx, g.seq); err != nil {
		return err
	}
	g.q.mu.Lock()
	defer g.q.mu.Unlock()
	return g.Err
}

// Settle waits until the group has finished, whatever its outcome; it
// returns only ctx's error, if ctx ends first.
func (g *Group[O]) Settle(ctx context.Context) error {
	if g.seq == 0 {
		return nil
	}
	return g.q.waitSeq(ctx, g.seq)
}

// Backend is the work the queue's writer hands to its store. Every method
// runs on the writer goroutine.
type Backend[O any] interface {
	// Commit runs batch in one transaction and, when that fails, whatever
	// fallback the backend has; it sets each group's Err and returns the
	// batch's figures. The batch's waiters wake after it returns.
	Commit(batch []*Group[O]) store.CommitInfo
	// Committed is called once the waiters of a batch are woken, with
	// what Commit returned.
	Committed(info store.CommitInfo)
	// Idle is called while the queue is empty; it returns once wake has a
	// value (or earlier: it is called again while nothing is queued).
	Idle(wake <-chan struct{})
	// BeforeTask is called before a task runs.
	BeforeTask()
	// Drained is called once the queue is closed and empty, before Run
	// returns.
	Drained()
}

// Queue is the ordered queue of groups and its writer.
type Queue[O any] struct {
	backend   Backend[O]
	batchSize int
	errClosed error

	// mu guards the fields below. It is a leaf: nothing is called while
	// holding it.
	mu       sync.Mutex
	queue    []*Group[O]
	closed   bool
	lastSeq  uint64        // sequence number of the last appended group
	doneSeq  uint64        // every group up to this one has finished
	progress chan struct{} // closed and replaced whenever doneSeq advances

	wake chan struct{} // capacity 1: "the queue may have work"
	done chan struct{} // closed when Run has drained the queue and returned
}

// New returns a queue whose batches hold at most batchSize ops (a single
// larger group still goes alone), committed by b. Appends after Close
// fail with errClosed. The caller starts the writer: go q.Run().
func New[O any](b Backend[O], batchSize int, errClosed error) *Queue[O] {
	return &Queue[O]{
		backend:   b,
		batchSize: batchSize,
		errClosed: errClosed,
		progress:  make(chan struct{}),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
}

// Enqueue gives g its place in append order, after every group enqueued
// before, and wakes the writer. It never blocks (the queue is unbounded)
// and is safe for concurrent use. It returns g, or a failed group once the
// queue is closed.
func (q *Queue[O]) Enqueue(g *Group[O]) *Group[O] {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return Failed[O](q.errClosed)
	}
	q.lastSeq++
	g.q, g.seq = q, q.lastSeq
	q.queue = append(q.queue, g)
	q.mu.Unlock()
	q.signal()
	return g
}

// Settled reports whether every group enqueued so far has finished.
func (q *Queue[O]) Settled() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lastSeq == q.doneSeq
}

// Depth returns how many groups are enqueued and not yet finished (those
// of the batch being committed included).
func (q *Queue[O]) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int(q.lastSeq - q.doneSeq)
}

// Barrier returns once every group enqueued before the call has finished
// (failures are reported to each group, not here).
func (q *Queue[O]) Barrier(ctx context.Context) error {
	q.mu.Lock()
	seq := q.lastSeq
	q.mu.Unlock()
	return q.waitSeq(ctx, seq)
}

// waitSeq waits until the group seq has finished. Groups finish in append
// order, so doneSeq says all there is to know.
func (q *Queue[O]) waitSeq(ctx context.Context, seq uint64) error {
	for {
		q.mu.Lock()
		done, progress := q.doneSeq, q.progress
		q.mu.Unlock()
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

// Wake wakes the writer if it is idle, to look again at what it has to
// do; never blocks.
func (q *Queue[O]) Wake() { q.signal() }

// signal wakes the writer if it is idle; never blocks.
func (q *Queue[O]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Close stops accepting groups and waits until Run has committed every
// group already enqueued and returned. Run must have been started.
func (q *Queue[O]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
	<-q.done
}

// Run is the writer: it takes groups off the queue in order, as many as
// fit in the batch size, has the backend commit them in one transaction
// and wakes their waiters. It returns when the queue is closed and
// drained.
func (q *Queue[O]) Run() {
	defer close(q.done)
	b := q.backend
	for {
		batch := q.next()
		if batch == nil {
			b.Drained()
			return
		}
		if t := batch[0].Task; t != nil {
			b.BeforeTask()
			batch[0].Err = t()
			q.finish(batch)
			continue
		}
		info := b.Commit(batch)
		q.finish(batch)
		b.Committed(info)
	}
}

// next blocks until groups are queued and takes the next batch: at least
// one group, then more while their ops fit in the batch size; a task goes
// alone. It returns nil when the queue is closed and nothing is left.
func (q *Queue[O]) next() []*Group[O] {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 {
		if q.closed {
			return nil
		}
		q.mu.Unlock()
		q.backend.Idle(q.wake)
		q.mu.Lock()
	}
	n, k := len(q.queue[0].Ops), 1
	for ; k < len(q.queue) && q.queue[0].Task == nil; k++ {
		size := len(q.queue[k].Ops)
		if n+size > q.batchSize || q.queue[k].Task != nil {
			break
		}
		n += size
	}
	batch := q.queue[:k:k]
	q.queue = q.queue[k:]
	if len(q.queue) == 0 {
		q.queue = nil // let the old backing array go
	}
	return batch
}

// finish publishes the outcome of batch and wakes every waiter.
func (q *Queue[O]) finish(batch []*Group[O]) {
	q.mu.Lock()
	for _, g := range batch {
		g.Ops = nil
	}
	q.doneSeq = batch[len(batch)-1].seq
	close(q.progress)
	q.progress = make(chan struct{})
	q.mu.Unlock()
}
