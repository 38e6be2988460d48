package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The cluster's lease is the row of the leader table (0002_leader.sql). It
// expires by the database's clock; a holder renews it well before, and a
// candidate takes it only once it has expired, raising the term. Taking
// and renewing update the row, so they wait for the write transactions
// under way, each of which holds a share lock on the row (zizq_fence):
// every write of a term commits before the next term begins.

// LeaseState is the lease as a node last read it.
type LeaseState struct {
	Holder string
	URL    string
	Term   int64
	// Held reports whether the state's holder took or renewed it: the
	// lease runs until at least the time the request was sent plus its
	// duration.
	Held bool
	// Left is how long the lease of another holder runs on, by the
	// database's clock: a candidate tries again once it has passed.
	Left time.Duration
}

// Lease takes and renews the cluster's lease for one holder.
type Lease struct {
	pool   *pgxpool.Pool
	holder string
	url    string
	ttl    time.Duration
}

// lockTimeout bounds how long taking or renewing waits for the row: a
// leader stopped in a transaction holds its share lock until the
// database ends the transaction (idle_in_transaction_session_timeout).
const lockTimeout = 2 * time.Second

// NewLease returns the lease of holder, advertised at url, lasting ttl
// from each renewal.
func NewLease(pool *pgxpool.Pool, holder, url string, ttl time.Duration) *Lease {
	return &Lease{pool: pool, holder: holder, url: url, ttl: ttl}
}

// Acquire takes the lease if it is free or has expired, or renews it if
// this holder has it at term (0: it has not). It returns the lease as it
// stands after the attempt; Held tells whether this holder holds it.
func (l *Lease) Acquire(ctx context.Context, term int64) (LeaseState, error) {
	var st LeaseState
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = `+strconv.FormatInt(lockTimeout.Milliseconds(), 10)); err != nil {
			return err
		}
		ttl := strconv.FormatInt(l.ttl.Milliseconds(), 10) + " milliseconds"
		// Renew our own unexpired term, or take an expired (or missing)
		// lease with the next term.
		err := tx.QueryRow(ctx, `INSERT INTO leader (id, holder, url, term, expires_at)
			VALUES (1, $1, $2, 1, now() + $3::interval)
			ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, url = excluded.url,
				term = CASE WHEN leader.holder = excluded.holder AND leader.term = $4
					AND leader.expires_at > now() THEN leader.term ELSE leader.term + 1 END,
				expires_at = excluded.expires_at
			WHERE leader.expires_at <= now() OR (leader.holder = excluded.holder AND leader.term = $4)
			RETURNING holder, url, term`, l.holder, l.url, ttl, term).Scan(&st.Holder, &st.URL, &st.Term)
		if err == nil {
			st.Held = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var leftMs float64
		err = tx.QueryRow(ctx, `SELECT holder, url, term,
			greatest(extract(epoch FROM expires_at - now()) * 1000, 0)::float8
			FROM leader WHERE id = 1`).Scan(&st.Holder, &st.URL, &st.Term, &leftMs)
		st.Left = time.Duration(leftMs * float64(time.Millisecond))
		return err
	})
	if err != nil {
		return LeaseState{}, fmt.Errorf("lease: %w", wrapConn(err))
	}
	return st, nil
}

// Release lets the lease of term go at once (a leader that stops), so that
// another node need not wait for it to expire.
func (l *Lease) Release(ctx context.Context, term int64) error {
	_, err := l.pool.Exec(ctx, `UPDATE leader SET expires_at = now() WHERE id = 1 AND holder = $1 AND term = $2`, l.holder, term)
	if err != nil {
		return fmt.Errorf("release lease: %w", wrapConn(err))
	}
	return nil
}
