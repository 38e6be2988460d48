package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/zizq/zizq/store"
)

// Cluster is the database of a cluster of servers as one node sees it: the
// lease the nodes compete for, held in the node's name (its Acquire and
// Release), and the store of each term the node leads.
type Cluster struct {
	*Lease
	opts   Options
	holder string
	ttl    time.Duration
}

// JoinCluster connects to the cluster's database at opts.URL, brings its
// schema up to date, and returns holder's view of it: its lease is
// advertised at url (its admin port at adminURL, "" for none) and lasts
// ttl from each renewal. opts also tunes the store of each term (its
// Fence is set per term). Close it once the node stops.
func JoinCluster(ctx context.Context, opts Options, holder, url, adminURL string, ttl time.Duration) (*Cluster, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// The lease's own pool is small: its statements are few and short.
	pool, err := NewPool(ctx, opts.URL, 2, nil)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, pool, opts.Logger); err != nil {
		pool.Close()
		return nil, err
	}
	return &Cluster{Lease: NewLease(pool, holder, url, adminURL, ttl), opts: opts, holder: holder, ttl: ttl}, nil
}

// OpenTerm opens the store of term, which the holder leads: every write
// transaction of it is fenced by the holder's lease at term. onCommit is
// called after each transaction, after opts.OnCommit.
func (c *Cluster) OpenTerm(ctx context.Context, term int64, onCommit func(store.CommitInfo)) (store.Store, error) {
	so := c.opts
	so.Fence = &Fence{Holder: c.holder, Term: term, Lease: c.ttl}
	so.OnCommit = bothCommitHooks(c.opts.OnCommit, onCommit)
	return Open(ctx, so)
}

// Close closes the lease's connections; the stores of the terms are
// closed by their servers.
func (c *Cluster) Close() { c.pool.Close() }

// bothCommitHooks calls a, then b (either may be nil).
func bothCommitHooks(a, b func(store.CommitInfo)) func(store.CommitInfo) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(ci store.CommitInfo) {
		a(ci)
		b(ci)
	}
}
