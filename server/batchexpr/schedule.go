package batchexpr

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrBusy is the sandbox refusing a task for want of a worker: its queue
// is full, or no worker came free before the task's deadline. Neither the
// programs nor the payloads are at fault; the same task may succeed later.
var ErrBusy = errors.New("batch sandbox busy")

// How the sandbox shares its workers (see scheduler): every task waits in
// one queue, oldest first, and its deadline counts from its queueing. The
// general workers take any task. One more worker is kept for the tasks
// whose programs are trusted: each has completed a task lately, none has
// misbehaved (hit the deadline or killed its worker) lately, and none is
// running already. So a storm of hostile folds cannot hold every worker,
// whether its programs are new (they are not trusted before they work) or
// copies of one that has worked (only one copy runs on the kept worker,
// and its first overrun bars it), and the ordinary folds of the clients
// whose programs work keep a worker of their own.

// rememberFor is how long the sandbox remembers that a program worked or
// misbehaved: long enough to outlast a storm, short enough that a program
// that overran once on a loaded machine is soon trusted again (it keeps
// the general workers meanwhile).
const rememberFor = 10 * time.Minute

// maxRemembered bounds the programs remembered as having worked, and those
// as having misbehaved; the oldest is forgotten first.
const maxRemembered = 4096

// source identifies a pair of programs (a digest, so that remembering a
// large program costs no more than a small one).
type source [sha256.Size]byte

func sourceOf(c Config) source {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{c.When, c.Fold} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var src source
	h.Sum(src[:0])
	return src
}

// sourcesOf returns the programs a task runs: its check, then its fold.
func sourcesOf(t Task) []source {
	var out []source
	for _, c := range []*Config{t.Check, t.Into} {
		if c == nil {
			continue
		}
		if src := sourceOf(*c); len(out) == 0 || out[0] != src {
			out = append(out, src)
		}
	}
	return out
}

// ticket is a task's place in the scheduler: queued, then holding a
// worker's slot until it is released.
type ticket struct {
	sources  []source
	queued   time.Time
	deadline time.Time
	waited   time.Duration // from its queueing to its slot
	reserve  bool          // holds the kept worker's slot
	granted  chan struct{} // closed once the task holds a slot
	el       *list.Element // in the queue while it waits
}

// scheduler hands out the slots of the workers.
type scheduler struct {
	mu        sync.Mutex
	general   int  // general slots free
	reserve   bool // the kept slot is free
	maxQueued int
	queue     list.List // of *ticket, oldest first
	running   map[source]int
	worked    timeLog // the programs that completed a task
	offended  timeLog // the programs that misbehaved
	closed    bool
}

func newScheduler(workers, maxQueued int) *scheduler {
	return &scheduler{general: workers, reserve: true, maxQueued: maxQueued,
		running: map[source]int{}, worked: newTimeLog(), offended: newTimeLog()}
}

// acquire waits for a slot for a task queued now; the deadline bounds the
// wait and ctx may end it sooner.
func (s *scheduler) acquire(ctx context.Context, sources []source, timeout time.Duration) (*ticket, error) {
	now := time.Now()
	t := &ticket{sources: sources, queued: now, deadline: now.Add(timeout), granted: make(chan struct{})}
	if err := s.enqueue(t); err != nil {
		return nil, err
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-t.granted:
		return t, nil
	case <-ctx.Done():
		s.abandon(t)
		return nil, ctx.Err()
	case <-timer.C:
		s.abandon(t)
		return nil, fmt.Errorf("%w: no worker came free within the %s limit", ErrBusy, timeout)
	}
}

// enqueue grants t a slot at once if one is free to it, or queues it.
func (s *scheduler) enqueue(t *ticket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if s.grant(t, t.queued) {
		return nil
	}
	if s.queue.Len() >= s.maxQueued {
		return fmt.Errorf("%w: every worker is taken and the queue is full (%d waiting)", ErrBusy, s.maxQueued)
	}
	t.el = s.queue.PushBack(t)
	return nil
}

// abandon gives up t's place, or its slot if one came meanwhile.
func (s *scheduler) abandon(t *ticket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-t.granted:
		s.free(t, time.Now())
	default:
		s.queue.Remove(t.el)
	}
}

// grant gives t a slot if one is free to it: any general one, or the kept
// one when t's programs are trusted.
func (s *scheduler) grant(t *ticket, now time.Time) bool {
	switch {
	case s.closed:
		return false
	case s.general > 0:
		s.general--
	case s.reserve && s.trusted(t, now):
		s.reserve, t.reserve = false, true
	default:
		return false
	}
	for _, src := range t.sources {
		s.running[src]++
	}
	t.waited = now.Sub(t.queued)
	close(t.granted)
	return true
}

// trusted: each of t's programs completed a task lately, has not
// misbehaved lately and is not running now.
func (s *scheduler) trusted(t *ticket, now time.Time) bool {
	for _, src := range t.sources {
		if s.running[src] > 0 || !s.worked.has(src, now) || s.offended.has(src, now) {
			return false
		}
	}
	return true
}

// release returns t's slot once its task is done: completed (its programs
// worked), or with the programs that misbehaved in it.
func (s *scheduler) release(t *ticket, completed bool, offenders []source) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if completed {
		for _, src := range t.sources {
			s.worked.add(src, now)
		}
	}
	for _, src := range offenders {
		s.offended.add(src, now)
	}
	s.free(t, now)
}

// free returns t's slot and hands the free slots to the oldest waiting
// tasks that may have them; a task past its deadline is left to give up.
func (s *scheduler) free(t *ticket, now time.Time) {
	for _, src := range t.sources {
		if s.running[src]--; s.running[src] == 0 {
			delete(s.running, src)
		}
	}
	if t.reserve {
		s.reserve = true
	} else {
		s.general++
	}
	for el := s.queue.Front(); el != nil && (s.general > 0 || s.reserve); {
		next := el.Next()
		if w := el.Value.(*ticket); now.Before(w.deadline) && s.grant(w, now) {
			s.queue.Remove(el)
		}
		el = next
	}
}

// close makes every later acquire fail; tasks queued give up at their
// deadline.
func (s *scheduler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

// timeLog remembers when each program last did something, for
// rememberFor, maxRemembered programs at most.
type timeLog struct {
	at map[source]time.Time
}

func newTimeLog() timeLog { return timeLog{at: map[source]time.Time{}} }

func (l timeLog) has(src source, now time.Time) bool {
	at, ok := l.at[src]
	return ok && now.Sub(at) < rememberFor
}

func (l timeLog) add(src source, now time.Time) {
	if _, ok := l.at[src]; !ok && len(l.at) >= maxRemembered {
		l.forgetOldest(now)
	}
	l.at[src] = now
}

// forgetOldest drops the programs past rememberFor, or else the oldest.
func (l timeLog) forgetOldest(now time.Time) {
	var oldest source
	var oldestAt time.Time
	for src, at := range l.at {
		if now.Sub(at) >= rememberFor {
			delete(l.at, src)
			continue
		}
		if oldestAt.IsZero() || at.Before(oldestAt) {
			oldest, oldestAt = src, at
		}
	}
	if len(l.at) >= maxRemembered {
		delete(l.at, oldest)
	}
}
