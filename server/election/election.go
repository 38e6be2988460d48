// Package election elects a cluster's leader over a lease that expires:
// the node that holds it leads, and renews it every third of its duration;
// the others follow the holder, and take the lease once it has expired.
//
// A leader that cannot renew steps down a quarter of the lease before it
// could expire, by its own clock from the moment it sent its last
// successful renewal: the lease's own expiry, counted by the database from
// when the renewal arrived, is later than that. So the old leader has
// stopped before another can take over. Every decision reads the injected
// clock, so the election is tested with a fake one.
package election

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/store"
)

// Lease is the cluster's lease as one node sees it.
type Lease interface {
	// Acquire renews the lease of term (0: the node holds none), or takes
	// it with a new term if it is free or has expired. It returns the
	// lease as it stands after the attempt; Held tells whether this node
	// holds it, and at which term.
	Acquire(ctx context.Context, term int64) (store.LeaseState, error)
	// Release lets the lease of term go at once, so that another node
	// need not wait for it to expire.
	Release(ctx context.Context, term int64) error
}

// Roles is what a node does as the election decides its role. The
// election calls them one at a time, from its own goroutine.
type Roles interface {
	// Lead starts the node's term; ctx ends when the election stops.
	Lead(ctx context.Context, term int64)
	// StepDown ends the node's term, if it has one, for reason: by the
	// time it is called the election no longer holds the lease.
	StepDown(reason string)
	// Follow records the lease of another holder, at every round.
	Follow(st store.LeaseState)
	// Unknown records that the lease could not be read: whether the
	// leader is reachable is unknown.
	Unknown()
	// TermFailed reports whether the term's server failed to start; a
	// leader that could not start would hold the lease and serve nothing.
	TermFailed() bool
}

// Config configures an Elector.
type Config struct {
	Lease Lease
	// TTL is how long the lease lasts after each renewal.
	TTL   time.Duration
	Roles Roles
	Clock clock.Clock // nil: the real clock
	// Logger gets the changes of term, naming Node (this node's id) and
	// URL (where the others reach it).
	Logger *slog.Logger
	Node   string
	URL    string
}

// Elector runs one node's side of the election.
type Elector struct {
	cfg Config

	mu       sync.Mutex
	leader   bool
	term     int64     // the term led, or last followed
	deadline time.Time // a leader steps down at this time unless it renews
	followed string    // the URL of the leader last followed ("": none)

	ready chan struct{} // closed once the first round is done
}

// New returns the elector of cfg; it is a follower until Run's first
// round.
func New(cfg Config) *Elector {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Elector{cfg: cfg, ready: make(chan struct{})}
}

// Ready is closed once the node knows whether it leads.
func (e *Elector) Ready() <-chan struct{} { return e.ready }

// Holding reports whether this node leads and its lease surely runs.
func (e *Elector) Holding() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader && e.cfg.Clock.Now().Before(e.deadline)
}

// Run runs the election until ctx ends, then steps down and lets the
// lease go, so that another node takes over at once.
func (e *Elector) Run(ctx context.Context) {
	first := true
	for {
		wait := e.round(ctx)
		if first {
			close(e.ready)
			first = false
		}
		if !e.sleep(ctx, wait) {
			e.shutdown()
			return
		}
	}
}

// minWait is the least a round waits for the lease, or for the next round.
const minWait = 10 * time.Millisecond

// round is one turn of the election: renew or take the lease, or learn
// the leader. It returns how long to wait for the next.
func (e *Elector) round(ctx context.Context) time.Duration {
	interval := e.cfg.TTL / 3
	e.mu.Lock()
	leader, term, deadline := e.leader, e.term, e.deadline
	e.mu.Unlock()
	if leader && e.cfg.Roles.TermFailed() {
		e.stepDown("the term's server failed to start")
		e.release(ctx, term)
		return interval
	}
	if !leader {
		term = 0
	}
	limit := interval
	if leader {
		limit = min(interval, deadline.Sub(e.cfg.Clock.Now()))
	}
	sent := e.cfg.Clock.Now()
	st, err := e.acquire(ctx, term, max(limit, minWait))
	switch {
	case err != nil:
		return e.failed(ctx, err, leader, deadline)
	case st.Held && leader && st.Term == term:
		e.mu.Lock()
		e.deadline = e.stepDownAt(sent)
		e.mu.Unlock()
	case st.Held:
		if leader {
			e.stepDown("the term ended meanwhile: starting afresh")
		}
		e.lead(ctx, st.Term, sent)
	default:
		if leader {
			e.stepDown("another server holds the lease: " + st.URL)
		}
		e.follow(st)
		// Try again as soon as the leader's lease could have expired.
		return min(interval, st.Left+minWait)
	}
	return interval
}

// errNoAnswer is a lease that did not answer within its round's time.
var errNoAnswer = errors.New("no answer in time")

// acquire calls Lease.Acquire, given up after timeout.
func (e *Elector) acquire(ctx context.Context, term int64, timeout time.Duration) (store.LeaseState, error) {
	ctx, cancel := e.withTimeout(ctx, timeout)
	defer cancel()
	st, err := e.cfg.Lease.Acquire(ctx, term)
	if err != nil && errors.Is(context.Cause(ctx), errNoAnswer) {
		err = fmt.Errorf("%w: %w", errNoAnswer, err)
	}
	return st, err
}

// withTimeout is ctx ended after d by the election's clock.
func (e *Elector) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := e.cfg.Clock.AfterFunc(d, func() { cancel(errNoAnswer) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// failed handles a round whose lease could not be read or renewed: a
// leader past its deadline steps down, one before it tries again soon.
func (e *Elector) failed(ctx context.Context, err error, leader bool, deadline time.Time) time.Duration {
	interval := e.cfg.TTL / 3
	if ctx.Err() == nil {
		e.cfg.Logger.Warn("lease", "err", err)
	}
	now := e.cfg.Clock.Now()
	if leader && !now.Before(deadline) {
		e.stepDown("the lease could not be renewed in time")
		return interval
	}
	e.cfg.Roles.Unknown()
	if leader {
		// Try again soon: a renewal can fail once (it waits for the
		// term's own write under way) and still succeed in time.
		return max(min(interval/4, deadline.Sub(now)), minWait)
	}
	return interval
}

// stepDownAt is the deadline of a renewal sent at sent.
func (e *Elector) stepDownAt(sent time.Time) time.Time {
	return sent.Add(e.cfg.TTL - e.cfg.TTL/4)
}

// lead starts this node's term, whose lease was sent for at sent.
func (e *Elector) lead(ctx context.Context, term int64, sent time.Time) {
	e.mu.Lock()
	e.leader, e.term, e.deadline, e.followed = true, term, e.stepDownAt(sent), e.cfg.URL
	e.mu.Unlock()
	// Logged first: the term's server starts in Lead, and whoever sees
	// this node lead (its Role, a forwarded request's 503) must find the
	// line that says since when.
	e.cfg.Logger.Info("lease acquired: leading the cluster", "term", term, "node", e.cfg.Node, "url", e.cfg.URL)
	e.cfg.Roles.Lead(ctx, term)
}

// follow records the leader of st.
func (e *Elector) follow(st store.LeaseState) {
	e.mu.Lock()
	changed := e.followed != st.URL || e.term != st.Term
	e.followed, e.term = st.URL, st.Term
	e.mu.Unlock()
	if changed {
		e.cfg.Logger.Info("following", "term", st.Term, "node", e.cfg.Node, "leader", st.URL, "leader_node", st.Holder)
	}
	e.cfg.Roles.Follow(st)
}

// reasonShutdown is the step-down of a node that stops.
const reasonShutdown = "shutting down"

// stepDown stops leading, for reason.
func (e *Elector) stepDown(reason string) {
	e.mu.Lock()
	leader, term := e.leader, e.term
	e.leader, e.followed = false, ""
	e.mu.Unlock()
	switch {
	case leader && reason == reasonShutdown:
		e.cfg.Logger.Info("lease given up: stepping down", "term", term, "node", e.cfg.Node, "reason", reason)
	case leader:
		e.cfg.Logger.Warn("lease lost: stepping down", "term", term, "node", e.cfg.Node, "reason", reason)
	}
	e.cfg.Roles.StepDown(reason)
}

// shutdown steps down and lets the lease go.
func (e *Elector) shutdown() {
	e.mu.Lock()
	leader, term := e.leader, e.term
	e.mu.Unlock()
	e.stepDown(reasonShutdown)
	if leader {
		e.release(context.Background(), term)
	}
}

// releaseTimeout bounds the release of a lease.
const releaseTimeout = 5 * time.Second

// release lets the lease of term go, so that another node need not wait
// for it to expire.
func (e *Elector) release(ctx context.Context, term int64) {
	ctx, cancel := e.withTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := e.cfg.Lease.Release(ctx, term); err != nil {
		e.cfg.Logger.Warn("release the lease", "err", err)
	}
}

// sleep waits d by the election's clock; false when ctx ends first.
func (e *Elector) sleep(ctx context.Context, d time.Duration) bool {
	wake := make(chan struct{})
	t := e.cfg.Clock.AfterFunc(d, func() { close(wake) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
		return true
	}
}
