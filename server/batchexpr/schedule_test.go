package batchexpr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newTicket is a task of the programs srcs, queued at now.
func newTicket(now time.Time, srcs ...source) *ticket {
	return &ticket{sources: srcs, queued: now, deadline: now.Add(time.Minute), granted: make(chan struct{})}
}

func isGranted(t *ticket) bool {
	select {
	case <-t.granted:
		return true
	default:
		return false
	}
}

func src(name string) source { return sourceOf(Config{When: "true", Fold: name}) }

// The kept slot goes only to a task whose programs worked, have not
// misbehaved since and are not running; the general ones to the oldest.
func TestScheduler_KeepsASlotForTrustedPrograms(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := newScheduler(1, 8)
	worked, unknown, offender := src("worked"), src("unknown"), src("offender")
	s.worked.add(worked, now)
	s.worked.add(offender, now)
	s.offended.add(offender, now)

	first := newTicket(now, unknown)
	require.NoError(t, s.enqueue(first))
	require.True(t, isGranted(first), "a general slot takes any task")
	require.False(t, first.reserve)

	queued := []*ticket{newTicket(now, unknown), newTicket(now, offender), newTicket(now, worked, unknown)}
	for _, q := range queued {
		require.NoError(t, s.enqueue(q))
		require.False(t, isGranted(q), "not trusted: never worked, misbehaved, or one of its programs never worked")
	}
	trusted := newTicket(now, worked)
	require.NoError(t, s.enqueue(trusted))
	require.True(t, isGranted(trusted))
	require.True(t, trusted.reserve)

	again := newTicket(now, worked)
	require.NoError(t, s.enqueue(again))
	require.False(t, isGranted(again), "its program is running: one copy on the kept slot")
	s.release(trusted, true, nil)
	require.True(t, isGranted(again), "the kept slot passes over the untrusted to it")
	require.True(t, again.reserve)

	s.release(first, false, []source{unknown})
	require.True(t, isGranted(queued[0]), "the general slot goes to the oldest task")
	require.False(t, isGranted(queued[1]))

	s.release(again, false, []source{worked})
	require.False(t, isGranted(queued[1]) || isGranted(queued[2]), "the kept slot stays free for a trusted task")
	later := newTicket(now, worked)
	require.NoError(t, s.enqueue(later))
	require.False(t, isGranted(later), "a program that misbehaved is not trusted any more")
	require.Equal(t, 3, s.queue.Len())
}

func TestScheduler_BoundsTheQueue(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := newScheduler(1, 2)
	for range 3 {
		require.NoError(t, s.enqueue(newTicket(now, src("p"))))
	}
	err := s.enqueue(newTicket(now, src("p")))
	require.ErrorIs(t, err, ErrBusy)
	require.EqualError(t, err, "batch sandbox busy: every worker is taken and the queue is full (2 waiting)")
}

// A waiting task gives up at its deadline, or when its context ends, and
// leaves the queue.
func TestScheduler_AcquireGivesUp(t *testing.T) {
	t.Parallel()
	s := newScheduler(1, 8)
	held, err := s.acquire(context.Background(), []source{src("p")}, time.Minute)
	require.NoError(t, err)

	_, err = s.acquire(context.Background(), []source{src("p")}, 50*time.Millisecond)
	require.EqualError(t, err, "batch sandbox busy: no worker came free within the 50ms limit")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.acquire(cancelled, []source{src("p")}, time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, s.queue.Len())

	s.release(held, true, nil)
	_, err = s.acquire(context.Background(), []source{src("p")}, time.Minute)
	require.NoError(t, err, "the slot came back")
}

// A task queued behind one past its deadline is not kept waiting by it.
func TestScheduler_PassesOverExpiredTasks(t *testing.T) {
	t.Parallel()
	now := time.Now()
	s := newScheduler(1, 8)
	running := newTicket(now, src("a"))
	require.NoError(t, s.enqueue(running))
	expired := newTicket(now.Add(-2*time.Minute), src("b"))
	require.NoError(t, s.enqueue(expired))
	next := newTicket(now, src("c"))
	require.NoError(t, s.enqueue(next))
	s.release(running, true, nil)
	require.False(t, isGranted(expired), "it gives up on its own")
	require.True(t, isGranted(next))
}

func TestTimeLog_ForgetsTheOld(t *testing.T) {
	t.Parallel()
	now := time.Now()
	l := newTimeLog()
	l.add(src("a"), now)
	require.True(t, l.has(src("a"), now.Add(rememberFor-time.Second)))
	require.False(t, l.has(src("a"), now.Add(rememberFor)))

	l = newTimeLog()
	for i := range maxRemembered {
		l.add(sourceOf(Config{When: "true", Fold: string(rune(i))}), now.Add(time.Duration(i)))
	}
	l.add(src("new"), now.Add(time.Minute))
	require.Len(t, l.at, maxRemembered, "bounded")
	require.True(t, l.has(src("new"), now.Add(time.Minute)))
	require.False(t, l.has(sourceOf(Config{When: "true", Fold: string(rune(0))}), now), "the oldest went")
}

// A task whose deadline its wait ate is busy, and its program is not
// blamed; one that ran for most of its deadline is refused as the program's.
func TestSandbox_OverranBlamesTheLongerPart(t *testing.T) {
	t.Parallel()
	s := NewSandbox(SandboxOptions{})
	t.Cleanup(s.Close)
	refusal := refuse(StageFold, "fold expression took longer than 1s")
	blamed := []source{src("p")}

	o := s.overran(&ticket{waited: 800 * time.Millisecond}, 200*time.Millisecond, refusal, nil, blamed)
	require.True(t, errors.Is(o.err, ErrBusy), "got %v", o.err)
	require.EqualError(t, o.err, "batch sandbox busy: the task waited 800ms for a worker and ran out of its 1s limit")
	require.Empty(t, o.offenders)

	o = s.overran(&ticket{waited: 100 * time.Millisecond}, 900*time.Millisecond, refusal, nil, blamed)
	require.Same(t, refusal, o.err)
	require.Equal(t, blamed, o.offenders)
}

func TestSourcesOf(t *testing.T) {
	t.Parallel()
	a, b := Config{When: "true", Fold: "$new"}, Config{When: "$new", Fold: "true"}
	require.NotEqual(t, sourceOf(a), sourceOf(b), "when and fold are told apart")
	require.Equal(t, []source{sourceOf(a)}, sourcesOf(Task{Check: &a, Into: &a}))
	require.Equal(t, []source{sourceOf(a), sourceOf(b)}, sourcesOf(Task{Check: &a, Into: &b}))
	require.Equal(t, []source{sourceOf(b)}, stageSources(Task{Check: &a, Into: &b}, StageFold))
	require.Equal(t, []source{sourceOf(a)}, stageSources(Task{Check: &a, Into: &b}, StageDryRun))
}
