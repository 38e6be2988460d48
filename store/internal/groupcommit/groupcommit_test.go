package groupcommit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

var errClosed = errors.New("closed")

// recorder is a backend that commits by recording: each batch's ops, in
// order, and the events around it. A batch holding a "bad" op fails whole;
// it then retries each group alone, as the stores do, so that only the
// group holding it fails.
type recorder struct {
	mu       sync.Mutex
	batches  [][]string // ops of each transaction attempted, retries included
	events   []string   // "commit", "committed", "task", "before-task", "drained"
	idles    int
	gate     chan struct{} // when set, Commit waits for it to close
	inCommit chan struct{} // when set, Commit signals here on entry
}

func (r *recorder) note(e string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) tx(groups []*Group[string]) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ops []string
	bad := false
	for _, g := range groups {
		ops = append(ops, g.Ops...)
		for _, o := range g.Ops {
			bad = bad || o == "bad"
		}
	}
	r.batches = append(r.batches, ops)
	if bad {
		return errors.New("bad op")
	}
	return nil
}

func (r *recorder) Commit(batch []*Group[string]) store.CommitInfo {
	if r.inCommit != nil {
		r.inCommit <- struct{}{}
	}
	if r.gate != nil {
		<-r.gate
	}
	r.note("commit")
	if err := r.tx(batch); err != nil {
		for _, g := range batch {
			g.Err = r.tx([]*Group[string]{g})
		}
	}
	return store.CommitInfo{Groups: len(batch)}
}

func (r *recorder) Committed(store.CommitInfo) { r.note("committed") }
func (r *recorder) Idle(wake <-chan struct{}) {
	r.mu.Lock()
	r.idles++
	r.mu.Unlock()
	<-wake
}
func (r *recorder) BeforeTask() { r.note("before-task") }
func (r *recorder) Drained()    { r.note("drained") }

// start returns a running queue of batch size n over r, closed at the
// end of the test.
func start(t *testing.T, r *recorder, n int) *Queue[string] {
	t.Helper()
	q := New[string](r, n, errClosed)
	go q.Run()
	t.Cleanup(q.Close)
	return q
}

func group(ops ...string) *Group[string] { return &Group[string]{Ops: ops} }

// held returns a recorder whose first commit is held until release is
// called, with that first batch (one group "first") already in Commit: the
// groups enqueued meanwhile queue up behind it.
func held(t *testing.T, n int) (*recorder, *Queue[string], *Group[string], func()) {
	t.Helper()
	r := &recorder{gate: make(chan struct{}), inCommit: make(chan struct{}, 100)}
	q := start(t, r, n)
	first := q.Enqueue(group("first"))
	<-r.inCommit
	var once sync.Once
	release := func() { once.Do(func() { close(r.gate) }) }
	t.Cleanup(release)
	return r, q, first, release
}

func waitAll(t *testing.T, gs ...*Group[string]) []error {
	t.Helper()
	errs := make([]error, len(gs))
	for i, g := range gs {
		errs[i] = g.Wait(context.Background())
	}
	return errs
}

func TestQueue_CommitsInAppendOrder(t *testing.T) {
	t.Parallel()
	r, q, first, release := held(t, 1000)
	var gs []*Group[string]
	for _, ops := range [][]string{{"a", "b"}, {"c"}, {"d", "e", "f"}} {
		gs = append(gs, q.Enqueue(group(ops...)))
	}
	release()
	require.Equal(t, []error{nil, nil, nil, nil}, waitAll(t, append([]*Group[string]{first}, gs...)...))
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, [][]string{{"first"}, {"a", "b", "c", "d", "e", "f"}}, r.batches,
		"the groups queued behind a commit share the next transaction, in order")
}

func TestQueue_BatchesHoldAtMostBatchSizeOps(t *testing.T) {
	t.Parallel()
	r, q, first, release := held(t, 3)
	gs := []*Group[string]{first}
	for _, ops := range [][]string{{"a", "b"}, {"c"}, {"d"}, {"e", "f", "g", "h"}, {"i"}} {
		gs = append(gs, q.Enqueue(group(ops...)))
	}
	release()
	waitAll(t, gs...)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, [][]string{{"first"}, {"a", "b", "c"}, {"d"}, {"e", "f", "g", "h"}, {"i"}}, r.batches,
		"a batch stops before the group that would overflow it; a larger group goes alone, whole")
}

func TestQueue_AFailingGroupFailsAlone(t *testing.T) {
	t.Parallel()
	_, q, first, release := held(t, 1000)
	ok1, bad, ok2 := q.Enqueue(group("a")), q.Enqueue(group("b", "bad")), q.Enqueue(group("c"))
	release()
	errs := waitAll(t, first, ok1, bad, ok2)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.EqualError(t, errs[2], "bad op")
	require.NoError(t, errs[3])
}

func TestQueue_TasksRunAloneInOrder(t *testing.T) {
	t.Parallel()
	r, q, first, release := held(t, 1000)
	var order []string // written by the writer goroutine alone
	before := q.Enqueue(group("a"))
	task := q.Enqueue(&Group[string]{Task: func() error {
		r.mu.Lock()
		order = append(order, "task after "+r.batches[len(r.batches)-1][0])
		r.mu.Unlock()
		return errors.New("task failed")
	}})
	after := q.Enqueue(group("b"))
	release()
	errs := waitAll(t, first, before, task, after)
	require.EqualError(t, errs[2], "task failed", "a task's error is its group's")
	require.NoError(t, errs[3])
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, []string{"task after a"}, order)
	require.Equal(t, [][]string{{"first"}, {"a"}, {"b"}}, r.batches, "no batch spans a task")
	require.Equal(t, []string{"commit", "committed", "commit", "committed", "before-task", "commit", "committed"}, r.events)
}

func TestQueue_BarrierWaitsForEveryEarlierGroup(t *testing.T) {
	t.Parallel()
	_, q, first, release := held(t, 1000)
	g := q.Enqueue(group("a"))
	barrier := make(chan error, 1)
	go func() { barrier <- q.Barrier(context.Background()) }()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, q.Barrier(ctx), context.DeadlineExceeded, "the groups have not committed")
	require.False(t, q.Settled())
	require.Equal(t, 2, q.Depth(), "the group in commit and the one queued")
	select {
	case <-barrier:
		t.Fatal("Barrier returned before the groups finished")
	default:
	}

	release()
	require.NoError(t, <-barrier)
	require.Equal(t, []error{nil, nil}, waitAll(t, first, g), "both had finished when Barrier returned")
	require.True(t, q.Settled())
	require.Zero(t, q.Depth())
}

func TestQueue_WaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	_, q, first, release := held(t, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, first.Wait(ctx), context.Canceled)
	require.ErrorIs(t, first.Settle(ctx), context.Canceled)
	release()
	require.NoError(t, first.Wait(context.Background()), "the group still commits")
	require.NoError(t, q.Barrier(context.Background()))
}

func TestQueue_CloseDrainsThenRefuses(t *testing.T) {
	t.Parallel()
	r, q, first, release := held(t, 2)
	gs := []*Group[string]{first}
	for _, op := range []string{"a", "b", "c", "d", "e"} {
		gs = append(gs, q.Enqueue(group(op)))
	}
	closed := make(chan struct{})
	go func() { q.Close(); close(closed) }()
	release()
	<-closed
	for i, g := range gs {
		require.NoError(t, g.Settle(context.Background()), "group %d finished before Close returned", i)
		require.NoError(t, g.Err)
	}
	r.mu.Lock()
	require.Equal(t, [][]string{{"first"}, {"a", "b"}, {"c", "d"}, {"e"}}, r.batches)
	require.Equal(t, "drained", r.events[len(r.events)-1])
	r.mu.Unlock()

	late := q.Enqueue(group("late"))
	require.ErrorIs(t, late.Wait(context.Background()), errClosed)
	require.NoError(t, late.Settle(context.Background()))
	q.Close() // again: returns at once
}

func TestQueue_IdleWhileEmpty(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	q := start(t, r, 10)
	require.NoError(t, q.Enqueue(group("a")).Wait(context.Background()))
	require.NoError(t, q.Enqueue(group("b")).Wait(context.Background()))
	r.mu.Lock()
	defer r.mu.Unlock()
	require.GreaterOrEqual(t, r.idles, 1, "the writer idles while nothing is queued")
}

func TestQueue_ReleasesOpsOnceFinished(t *testing.T) {
	t.Parallel()
	q := start(t, &recorder{}, 10)
	g := q.Enqueue(group("a"))
	require.NoError(t, g.Wait(context.Background()))
	q.mu.Lock()
	defer q.mu.Unlock()
	require.Nil(t, g.Ops)
}

func TestFailed(t *testing.T) {
	t.Parallel()
	err := errors.New("unknown op")
	require.Equal(t, err, Failed[string](err).Wait(context.Background()))
}

// TestQueue_ConcurrentAppends checks, under -race, that groups appended
// from many goroutines all commit, each exactly once.
func TestQueue_ConcurrentAppends(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	q := start(t, r, 7)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				op := string(rune('A'+w)) + string(rune('0'+i%10))
				if err := q.Enqueue(group(op)).Wait(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, q.Barrier(context.Background()))
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, b := range r.batches {
		require.LessOrEqual(t, len(b), 7)
		n += len(b)
	}
	require.Equal(t, writers*each, n)
}
