package core

import (
	"context"
	"errors"
	"sync"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// Firing. When an entry's alarm comes, the core fires it on its own
// goroutine, under cronState.mu:
//
//   - The next occurrence is the first after now, so occurrences missed
//     while the server was down (or busy) collapse into one catch-up run.
//   - An entry that fires enqueues its template through the core's enqueue
//     (unique, batch and budget rules apply), with CronFired in the same
//     group: the job and the entry's next and last enqueue times commit
//     together, so a crash can neither fire an occurrence twice (it
//     committed: next has moved on) nor lose one (it did not: next is
//     still due, and fires at start).
//   - A paused entry, or an entry of a paused group, only moves its next
//     occurrence on.
//   - An enqueue the state refuses (a budget deleted, no create_with) skips
//     that occurrence with a log line; a commit that fails (storage) leaves
//     the entry as it was and tries again a second later.
//
// The fires of one wake-up run side by side, so their commits share
// transactions.

// cronFireParallelism bounds the fires in flight at once.
const cronFireParallelism = 64

// cronRetryMs is how long a fire whose commit failed waits to try again.
const cronRetryMs = 1000

// cronFire is one due entry being fired, and what came of it.
type cronFire struct {
	group *cronGroup
	entry *cronEntry
	now   int64
	next  int64
	fired bool // a job was enqueued: last_enqueue_at is now
	retry bool // nothing committed
}

// onCronAlarm receives the engine's due alarms, under the engine lock:
// it only hands them to the firing goroutine.
func (s *Service) onCronAlarm(names []string) {
	c := &s.cron
	c.dueMu.Lock()
	c.due = append(c.due, names...)
	c.dueMu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// runCron fires due entries as their alarms come, until ctx ends.
func (s *Service) runCron(ctx context.Context) {
	defer close(s.cron.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.cron.wake:
		}
		s.fireDue(ctx)
	}
}

// fireDue fires the entries whose alarms came and that are due.
func (s *Service) fireDue(ctx context.Context) {
	c := &s.cron
	c.dueMu.Lock()
	names := c.due
	c.due = nil
	c.dueMu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed {
		return
	}
	now := s.nowMs()
	var fires []*cronFire
	var rearm []engine.Alarm
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		g, e := c.lookup(name)
		if e == nil || seen[name] {
			continue
		}
		seen[name] = true
		switch next := e.row.NextEnqueueAt; {
		case next == 0:
		case next > now:
			// The clock went back, or the entry changed since: wait again.
			rearm = append(rearm, engine.Alarm{Name: name, At: next})
		default:
			fires = append(fires, &cronFire{group: g, entry: e, now: now, next: e.sched.next(now)})
		}
	}
	s.runFires(ctx, fires)
	for _, f := range fires {
		rearm = append(rearm, s.settleFire(f))
	}
	if len(rearm) > 0 {
		s.engine.SetAlarms(rearm...)
	}
}

// runFires fires side by side, at most cronFireParallelism at once.
func (s *Service) runFires(ctx context.Context, fires []*cronFire) {
	sem := make(chan struct{}, cronFireParallelism)
	var wg sync.WaitGroup
	for _, f := range fires {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s.fire(ctx, f)
		}()
	}
	wg.Wait()
}

// fire enqueues one occurrence (unless paused) and records the schedule.
// It reads the entry only: fireDue applies the outcome.
func (s *Service) fire(ctx context.Context, f *cronFire) {
	e := f.entry
	group, name := e.row.Group, e.row.Name
	if !f.group.meta.Paused && !e.row.Paused {
		// The job is ready as of the fire, the moment its last_enqueue_at says.
		job := e.job
		job.ReadyAt = &f.now
		_, err := s.enqueue(ctx, []engine.NewJob{job}, store.CronFired(group, name, f.next, f.now))
		if err == nil {
			f.fired = true
			return
		}
		if !isRefusal(err) {
			s.log.Error("cron fire did not commit; retrying", "group", group, "entry", name, "err", err)
			f.retry = true
			return
		}
		s.log.Warn("cron occurrence skipped: its job was refused", "group", group, "entry", name, "err", err)
	}
	if err := wait(ctx, s.store.Append(store.CronFired(group, name, f.next, e.row.LastEnqueueAt))); err != nil {
		s.log.Error("cron schedule did not commit; retrying", "group", group, "entry", name, "err", err)
		f.retry = true
	}
}

// settleFire applies a fire's outcome to its entry and returns the
// entry's next alarm.
func (s *Service) settleFire(f *cronFire) engine.Alarm {
	e := f.entry
	name := alarmName(e.row.Group, e.row.Name)
	if f.retry {
		return engine.Alarm{Name: name, At: f.now + cronRetryMs}
	}
	e.row.NextEnqueueAt = f.next
	if f.fired {
		e.row.LastEnqueueAt = f.now
	}
	return engine.Alarm{Name: name, At: f.next}
}

// isRefusal reports whether err is the state refusing an enqueue, as
// opposed to a failure to commit it (or a busy batch sandbox).
func isRefusal(err error) bool {
	var ce *Error
	return errors.As(err, &ce) && ce.Kind != KindUnavailable && ce.Kind != KindStarting && ce.Kind != KindBusy
}
