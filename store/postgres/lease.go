package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zizq/zizq/store"
)

// The cluster's lease is the row of the leader table (0002_leader.sql). It
// expires by the database's clock; a holder renews it well before, and a
// candidate takes it only once it has expired, raising the term. Taking
// and renewing update the row, so they wait for the write transactions
// under way, each of which holds a share lock on the row (zizq_fence):
// every write of a term commits before the next term begins.

// LeaseState is the lease as a node last read it.
type LeaseState = store.LeaseState

// Lease takes and renews the cluster's lease for one holder.
type Lease struct {
	pool     *pgxpool.Pool
	holder   string
	url      string
	adminURL string
	ttl      time.Duration
}

// FrozenTxLimit is how long a leader's transaction may sit idle before the
// database ends it, for a lease of ttl. A leader stopped (SIGSTOP, a long
// pause) in the middle of a transaction holds its share lock on the lease
// until then, so this is also how long it can hold up a takeover once its
// lease has expired: a fifth of the lease, 2 s for the default 10 s. The
// leader itself steps down a quarter of the lease before its lease can
// expire, so a transaction idle this long is a stopped leader's, not a
// busy one's.
func FrozenTxLimit(ttl time.Duration) time.Duration {
	return max(ttl/5, time.Millisecond)
}

// NewLease returns the lease of holder, advertised at url (and its admin
// port at adminURL, "" for none), lasting ttl from each renewal.
func NewLease(pool *pgxpool.Pool, holder, url, adminURL string, ttl time.Duration) *Lease {
	return &Lease{pool: pool, holder: holder, url: url, adminURL: adminURL, ttl: ttl}
}

// Acquire takes the lease if it is free or has expired, or renews it if
// this holder has it at term (0: it has not). It returns the lease as it
// stands after the attempt; Held tells whether this holder holds it.
func (l *Lease) Acquire(ctx context.Context, term int64) (LeaseState, error) {
	var st LeaseState
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if term == 0 {
			// A candidate reads the lease first, without a lock: while
			// another's runs there is nothing to take, and the row lock
			// of taking would wait for the leader's write transactions
			// under way (each holds a share lock on the row), and hold
			// up the leader's next ones behind it.
			found, err := readLease(ctx, tx, &st)
			if err != nil || (found && st.Left > 0) {
				return err
			}
		}
		// Taking or renewing waits for the row as long as a stopped
		// leader's transaction can hold it, and no longer.
		lockTimeout := FrozenTxLimit(l.ttl).Milliseconds()
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = `+strconv.FormatInt(lockTimeout, 10)); err != nil {
			return err
		}
		ttl := strconv.FormatInt(l.ttl.Milliseconds(), 10) + " milliseconds"
		// Renew our own unexpired term, or take an expired (or missing)
		// lease with the next term.
		st = LeaseState{}
		err := tx.QueryRow(ctx, `INSERT INTO leader (id, holder, url, admin_url, term, expires_at)
			VALUES (1, $1, $2, $5, 1, now() + $3::interval)
			ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, url = excluded.url, admin_url = excluded.admin_url,
				term = CASE WHEN leader.holder = excluded.holder AND leader.term = $4
					AND leader.expires_at > now() THEN leader.term ELSE leader.term + 1 END,
				expires_at = excluded.expires_at
			WHERE leader.expires_at <= now() OR (leader.holder = excluded.holder AND leader.term = $4)
			RETURNING holder, url, admin_url, term`, l.holder, l.url, ttl, term, l.adminURL).Scan(&st.Holder, &st.URL, &st.AdminURL, &st.Term)
		if err == nil {
			st.Held = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		_, err = readLease(ctx, tx, &st)
		return err
	})
	if err != nil {
		return LeaseState{}, fmt.Errorf("lease: %w", wrapConn(err))
	}
	return st, nil
}

// readLease reads the lease into st, with how long it runs on by the
// database's clock; false when there is none yet.
func readLease(ctx context.Context, tx pgx.Tx, st *LeaseState) (bool, error) {
	var leftMs float64
	err := tx.QueryRow(ctx, `SELECT holder, url, admin_url, term,
		greatest(extract(epoch FROM expires_at - now()) * 1000, 0)::float8
		FROM leader WHERE id = 1`).Scan(&st.Holder, &st.URL, &st.AdminURL, &st.Term, &leftMs)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st.Left = time.Duration(leftMs * float64(time.Millisecond))
	return true, nil
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
