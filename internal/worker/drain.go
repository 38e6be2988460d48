package worker

import (
	"context"
	"time"

	"github.com/zizq/zizq/api"
)

// maybeDrain asks the server, when the worker drains and holds nothing,
// whether a job can still reach it; at most one question at a time, and
// then again every DrainPoll while the answer is yes.
func (l *loop) maybeDrain() {
	if !l.cfg.Drain || l.stopping || l.drainAsking || l.drainC != nil || !l.idle() {
		return
	}
	l.drainAsking = true
	activity := l.activity
	go func() {
		alive, err := reachable(l.ctx, l.cfg)
		l.answers <- drainAnswer{activity: activity, alive: alive, err: err}
	}()
}

// idle: connected, and holding nothing: no command running, no job
// waiting for one, no result on its way.
func (l *loop) idle() bool {
	return l.sess != nil && len(l.running) == 0 && len(l.waiting) == 0 && l.acks.busy() == 0
}

func (l *loop) onDrainAnswer(a drainAnswer) {
	l.drainAsking = false
	switch {
	case a.err != nil && l.ctx.Err() == nil:
		if !l.drainErr {
			l.note("cannot tell whether the queues are drained: " + a.err.Error())
			l.drainErr = true
		}
	case a.err != nil:
		return
	case !a.alive && a.activity == l.activity && l.idle():
		l.beginStop("")
		return
	}
	l.drainC = time.After(l.cfg.DrainPoll)
}

// reachable reports whether a job of the worker's queues can still reach
// it without waiting for the calendar: one that is ready (parked ones
// included, since budgets pay them in time) or in flight (on this worker's
// stream, about to arrive, or on another worker that may hand it back),
// unless a budget paused without an end holds it. Scheduled jobs (a future
// ready_at, a retry's backoff) do not count. One count covers ready and in
// flight, so a job moving between them is counted once.
func reachable(ctx context.Context, cfg Config) (bool, error) {
	cl := cfg.Client
	total, err := cl.CountJobs(ctx, api.JobQuery{Queues: cfg.Queues, Statuses: []string{api.StatusReady, api.StatusInFlight}})
	if err != nil || total == 0 {
		return false, err
	}
	paused, err := pausedForGood(ctx, cfg)
	if err != nil || len(paused) == 0 {
		return err == nil, err
	}
	// Counted after the total: a job that leaves a paused budget's line
	// meanwhile (a resume, an unbinding) is counted in the total, not
	// here, so the error is towards going on.
	blocked, err := cl.CountJobs(ctx, api.JobQuery{Queues: cfg.Queues, Statuses: []string{api.StatusReady}, BudgetKeys: paused})
	if err != nil {
		return false, err
	}
	return total > blocked, nil
}

// pausedForGood lists the budgets paused without an end: plain budgets
// and families (a family's key also matches the jobs bound through its
// sub-budgets), and the sub-budgets paused so on their own.
func pausedForGood(ctx context.Context, cfg Config) ([]string, error) {
	budgets, err := cfg.Client.ListBudgets(ctx, false)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, b := range budgets {
		if pausedWithoutEnd(b) {
			keys = append(keys, b.Key)
			continue
		}
		if b.PerKey == nil {
			continue
		}
		subs, err := cfg.Client.SubBudgets(ctx, b.Key, false)
		if err != nil {
			return nil, err
		}
		for _, s := range subs {
			if pausedWithoutEnd(s) {
				keys = append(keys, s.Key)
			}
		}
	}
	return keys, nil
}

func pausedWithoutEnd(b api.Budget) bool { return b.Paused && b.PausedUntil == 0 }
