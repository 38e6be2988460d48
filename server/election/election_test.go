package election

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/store"
)

const (
	ttl      = 900 * time.Millisecond
	interval = ttl / 3
	myURL    = "http://me"
)

// fakeLease is the lease row of a database that counts time by the
// test's fake clock, as the PostgreSQL lease does by the database's: a
// holder renews its own unexpired term; anyone takes an expired lease with
// the next term.
type fakeLease struct {
	clk *clock.Fake

	mu       sync.Mutex
	st       store.LeaseState // Held and Left unused
	expires  time.Time
	down     bool // the database is unreachable: calls wait for their timeout
	acquires int
	releases []int64
}

func (l *fakeLease) Acquire(ctx context.Context, term int64) (store.LeaseState, error) {
	l.mu.Lock()
	l.acquires++
	down := l.down
	l.mu.Unlock()
	if down {
		return store.LeaseState{}, l.hang(ctx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clk.Now()
	expired := !now.Before(l.expires)
	switch {
	case l.st.Holder == "me" && l.st.Term == term && term != 0 && !expired:
		l.expires = now.Add(ttl)
	case expired:
		l.st = store.LeaseState{Holder: "me", URL: myURL, Term: l.st.Term + 1}
		l.expires = now.Add(ttl)
	default:
		st := l.st
		st.Left = l.expires.Sub(now)
		return st, nil
	}
	st := l.st
	st.Held = true
	return st, nil
}

// hang waits as an unreachable database does: until ctx ends, which the
// election's timeout on the fake clock makes it do.
func (l *fakeLease) hang(ctx context.Context) error {
	if at, ok := l.clk.NextAt(); ok {
		l.clk.AdvanceTo(at)
	}
	<-ctx.Done()
	return fmt.Errorf("lease: %w", ctx.Err())
}

func (l *fakeLease) Release(ctx context.Context, term int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releases = append(l.releases, term)
	if l.st.Holder == "me" && l.st.Term == term {
		l.expires = l.clk.Now()
	}
	return nil
}

// takeBy gives the lease to another node, as if it had taken it at once.
func (l *fakeLease) takeBy(holder string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st = store.LeaseState{Holder: holder, URL: "http://" + holder, AdminURL: "http://" + holder + "-admin", Term: l.st.Term + 1}
	l.expires = l.clk.Now().Add(ttl)
}

func (l *fakeLease) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = down
}

// fakeRoles records the election's calls.
type fakeRoles struct {
	mu     sync.Mutex
	calls  []string
	failed bool
	// lastLog, when set, tells the last line logged so far; loggedAt holds
	// it as it was at each call.
	lastLog  func() string
	loggedAt []string
}

func (r *fakeRoles) record(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	if r.lastLog != nil {
		r.loggedAt = append(r.loggedAt, r.lastLog())
	}
}

func (r *fakeRoles) Lead(_ context.Context, term int64) { r.record("lead %d", term) }
func (r *fakeRoles) StepDown(reason string)             { r.record("step down: %s", reason) }
func (r *fakeRoles) Follow(st store.LeaseState)         { r.record("follow %s %d", st.URL, st.Term) }
func (r *fakeRoles) Unknown()                           { r.record("unknown") }
func (r *fakeRoles) TermFailed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *fakeRoles) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// syncBuffer is a log sink written by the election's goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// messages returns each logged line's message, with its term.
func (b *syncBuffer) messages(t *testing.T) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec["term"] != nil {
			require.Equal(t, "n1", rec["node"], "a change of term names the node: %s", line)
		}
		out = append(out, fmt.Sprintf("%s %v", rec["msg"], rec["term"]))
	}
	return out
}

type testBundle struct {
	t     *testing.T
	clk   *clock.Fake
	lease *fakeLease
	roles *fakeRoles
	logs  *syncBuffer
	e     *Elector
	start time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	b := &testBundle{t: t, clk: clk, lease: &fakeLease{clk: clk}, roles: &fakeRoles{}, logs: &syncBuffer{}, start: start}
	b.e = New(Config{
		Lease: b.lease, TTL: ttl, Roles: b.roles, Clock: clk,
		Logger: slog.New(slog.NewJSONHandler(b.logs, nil)), Node: "n1", URL: myURL,
	})
	return b
}

// round runs one round and returns its wait.
func (b *testBundle) round() time.Duration {
	return b.e.round(context.Background())
}

// at is the fake time elapsed since the start.
func (b *testBundle) at() time.Duration { return b.clk.Now().Sub(b.start) }

func TestElector_Round(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, b *testBundle)
		want []string // the roles' calls, in order
		logs []string // the logged messages with their terms
	}{{
		name: "TakesAFreeLease",
		run: func(t *testing.T, b *testBundle) {
			require.Equal(t, interval, b.round())
			require.True(t, b.e.Holding())
		},
		want: []string{"lead 1"},
		logs: []string{"lease acquired: leading the cluster 1"},
	}, {
		name: "RenewsOnTimeAndHoldsOn",
		run: func(t *testing.T, b *testBundle) {
			b.round()
			for range 5 {
				b.clk.Advance(interval)
				require.Equal(t, interval, b.round())
				require.True(t, b.e.Holding())
			}
			// The deadline runs three quarters of the lease from the last
			// renewal's sending.
			b.clk.Advance(ttl*3/4 - time.Millisecond)
			require.True(t, b.e.Holding())
			b.clk.Advance(time.Millisecond)
			require.False(t, b.e.Holding(), "a leader that has not renewed stops at its deadline")
		},
		want: []string{"lead 1"},
		logs: []string{"lease acquired: leading the cluster 1"},
	}, {
		name: "FollowsTheHolderThenTakesTheExpiredLease",
		run: func(t *testing.T, b *testBundle) {
			b.lease.takeBy("other")
			b.clk.Advance(ttl / 2)
			require.Equal(t, interval, b.round())
			require.False(t, b.e.Holding())
			b.clk.Advance(interval)
			// The lease has 150ms left: the next try comes just after.
			require.Equal(t, ttl/2-interval+minWait, b.round())
			b.clk.Advance(ttl/2 - interval + minWait)
			require.Equal(t, interval, b.round())
			require.True(t, b.e.Holding())
		},
		want: []string{"follow http://other 1", "follow http://other 1", "lead 2"},
		logs: []string{"following 1", "lease acquired: leading the cluster 2"},
	}, {
		name: "LostDatabaseRetriesThenStepsDownByTheDeadline",
		run: func(t *testing.T, b *testBundle) {
			b.round()
			b.lease.setDown(true)
			b.clk.Advance(interval)
			// The renewal waits its interval, then is tried again a
			// quarter of it later: at the deadline.
			require.Equal(t, interval/4, b.round())
			require.Equal(t, 2*interval, b.at())
			require.True(t, b.e.Holding())
			b.clk.Advance(interval / 4)
			require.Equal(t, ttl*3/4, b.at())
			require.False(t, b.e.Holding(), "no job goes out past the deadline")
			require.Equal(t, interval, b.round())
			require.Equal(t, ttl*3/4+minWait, b.at(), "stepped down at its deadline, before its lease could be taken")
			require.Equal(t, 3, b.lease.acquires)
			require.Empty(t, b.lease.releases, "the database is gone: nothing to release")
			require.Contains(t, b.logs.String(), "no answer in time")
		},
		want: []string{"lead 1", "unknown", "step down: the lease could not be renewed in time"},
		logs: []string{"lease acquired: leading the cluster 1", "lease <nil>", "lease <nil>", "lease lost: stepping down 1"},
	}, {
		name: "RenewalThatFailsOnceSucceedsInTime",
		run: func(t *testing.T, b *testBundle) {
			b.round()
			b.lease.setDown(true)
			b.clk.Advance(interval)
			wait := b.round()
			require.Equal(t, interval/4, wait, "a failed renewal is tried again after a quarter of the interval")
			b.lease.setDown(false)
			b.clk.Advance(wait)
			require.Equal(t, interval, b.round())
			// The deadline runs from the retry's sending.
			b.clk.Advance(ttl*3/4 - time.Millisecond)
			require.True(t, b.e.Holding())
			b.clk.Advance(time.Millisecond)
			require.False(t, b.e.Holding())
		},
		want: []string{"lead 1", "unknown"},
		logs: []string{"lease acquired: leading the cluster 1", "lease <nil>"},
	}, {
		name: "PausedLeaderWakesAfterLosingTheLease",
		run: func(t *testing.T, b *testBundle) {
			b.round()
			// The process stops; its lease expires and another takes it.
			b.clk.Advance(2 * ttl)
			b.lease.takeBy("other")
			require.False(t, b.e.Holding(), "on waking it hands nothing out before it asks")
			require.Equal(t, interval, b.round())
			require.False(t, b.e.Holding())
			require.Empty(t, b.lease.releases, "it does not touch the other's lease")
		},
		want: []string{"lead 1", "step down: another server holds the lease: http://other", "follow http://other 2"},
		logs: []string{"lease acquired: leading the cluster 1", "lease lost: stepping down 1", "following 2"},
	}, {
		name: "PausedLeaderWakesToAnExpiredLease",
		run: func(t *testing.T, b *testBundle) {
			b.round()
			b.clk.Advance(2 * ttl)
			require.False(t, b.e.Holding())
			b.round()
			require.True(t, b.e.Holding())
		},
		want: []string{"lead 1", "step down: the term ended meanwhile: starting afresh", "lead 2"},
		logs: []string{"lease acquired: leading the cluster 1", "lease lost: stepping down 1", "lease acquired: leading the cluster 2"},
	}, {
		name: "LateRenewalOfTheSameTermHoldsOn",
		run: func(t *testing.T, b *testBundle) {
			// Past the deadline but before the lease's expiry: the term
			// is still this node's, so the renewal keeps it.
			b.round()
			b.clk.Advance(ttl*3/4 + time.Millisecond)
			require.False(t, b.e.Holding())
			b.round()
			require.True(t, b.e.Holding())
		},
		want: []string{"lead 1"},
		logs: []string{"lease acquired: leading the cluster 1"},
	}, {
		name: "LeaderWhoseServerFailedLetsGo",
		run: func(t *testing.T, b *testBundle) {
			b.round()
			b.roles.failed = true
			b.clk.Advance(interval)
			require.Equal(t, interval, b.round())
			require.False(t, b.e.Holding())
			require.Equal(t, []int64{1}, b.lease.releases)
			b.roles.failed = false
			b.clk.Advance(interval)
			b.round()
		},
		want: []string{"lead 1", "step down: the term's server failed to start", "lead 2"},
		logs: []string{"lease acquired: leading the cluster 1", "lease lost: stepping down 1", "lease acquired: leading the cluster 2"},
	}, {
		name: "FollowerWithoutDatabase",
		run: func(t *testing.T, b *testBundle) {
			b.lease.setDown(true)
			require.Equal(t, interval, b.round())
			require.Equal(t, interval, b.at(), "the read waits a round's interval at most")
			require.False(t, b.e.Holding())
		},
		want: []string{"unknown"},
		logs: []string{"lease <nil>"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			tt.run(t, b)
			require.Equal(t, tt.want, b.roles.got())
			require.Equal(t, tt.logs, b.logs.messages(t))
		})
	}
}

// TestElector_Run: the loop renews by the clock and, once stopped, steps
// down and lets the lease go.
func TestElector_Run(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.e.Run(ctx) }()
	<-b.e.Ready()
	require.True(t, b.e.Holding())
	for i := 2; i <= 4; i++ {
		require.Eventually(t, func() bool { return b.clk.Pending() == 1 }, 5*time.Second, time.Millisecond)
		b.clk.Advance(interval)
		require.Eventually(t, func() bool {
			b.lease.mu.Lock()
			defer b.lease.mu.Unlock()
			return b.lease.acquires == i
		}, 5*time.Second, time.Millisecond)
	}
	cancel()
	<-done
	require.False(t, b.e.Holding())
	require.Equal(t, []int64{1}, b.lease.releases)
	require.Equal(t, []string{"lead 1", "step down: shutting down"}, b.roles.got())
	require.Equal(t, []string{"lease acquired: leading the cluster 1", "lease given up: stepping down 1"}, b.logs.messages(t))
}

// TestElector_LogsTheChangeFirst: a change of role is logged before the
// node acts on it, so that whoever sees it lead (its Role, the answers of
// its term's server) finds the line that says since when.
func TestElector_LogsTheChangeFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.roles.lastLog = func() string {
		msgs := b.logs.messages(t)
		if len(msgs) == 0 {
			return ""
		}
		return msgs[len(msgs)-1]
	}
	b.round()
	b.clk.Advance(2 * ttl) // a pause past the lease: the term ended
	b.round()
	require.Equal(t, []string{"lead 1", "step down: the term ended meanwhile: starting afresh", "lead 2"}, b.roles.got())
	require.Equal(t, []string{
		"lease acquired: leading the cluster 1",
		"lease lost: stepping down 1",
		"lease acquired: leading the cluster 2",
	}, b.roles.loggedAt)
}
