package postgres

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zizq/zizq/store"
)

// txTimeout bounds one write transaction, so that a database that stops
// answering fails the writes instead of holding them forever.
const txTimeout = 30 * time.Second

// runTx commits the groups in one transaction, in the strongest commit mode
// any of them needs, fenced by the lease when the DB has one.
func (db *DB) runTx(groups []*group) (err error) {
	db.txs.Add(1)
	mode := store.Buffered
	for _, g := range groups {
		mode = max(mode, g.Mode)
	}
	b := &pgx.Batch{}
	if mode == store.Fsync {
		b.Queue(`SET LOCAL synchronous_commit = on`)
	} else {
		b.Queue(`SET LOCAL synchronous_commit = off`)
	}
	db.queueFence(b)
	maxID := ""
	for _, ph := range plan(groups) {
		if id := queuePhase(b, ph); id > maxID {
			maxID = id
		}
	}
	if maxID != "" {
		b.Queue(`INSERT INTO meta (key, value) VALUES ('id_high_water', $1)
			ON CONFLICT (key) DO UPDATE SET value = greatest(meta.value, excluded.value)`, maxID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
	defer cancel()
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return wrapWrite("begin", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.Background())
		}
	}()
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return wrapWrite("write", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return wrapWrite("commit", err)
	}
	return nil
}

// queueFence queues the fence of a write transaction, when the DB has
// one. A leader stopped (SIGSTOP, a long pause) inside the transaction
// holds its share lock on the lease until the database ends the
// transaction: the transaction's own idle limit ends it soon, so that the
// next leader can take over. Read transactions (a backup streaming to a
// slow client) hold no such lock and keep no such limit.
func (db *DB) queueFence(b *pgx.Batch) {
	f := db.opts.Fence
	if f == nil {
		return
	}
	b.Queue(`SET LOCAL idle_in_transaction_session_timeout = ` + strconv.FormatInt(f.idleLimit().Milliseconds(), 10))
	b.Queue(`SELECT zizq_fence($1, $2)`, f.Holder, f.Term)
}

// queuePhase queues the statements of one phase and returns the greatest
// job ID it inserts.
func queuePhase(b *pgx.Batch, ph *phase) string {
	if ph.recover != nil {
		n := ph.recover
		b.Queue(`UPDATE jobs SET status = 1 WHERE status = 2`).Exec(func(ct pgconn.CommandTag) error {
			*n = ct.RowsAffected()
			return nil
		})
		return ""
	}
	if ph.global != nil {
		b.Queue(`DELETE FROM jobs`)
		b.Queue(`DELETE FROM job_errors`)
		b.Queue(`DELETE FROM budgets`)
		return ""
	}
	maxID := ""
	for s, ops := range ph.slots {
		if len(ops) == 0 {
			continue
		}
		switch slot(s) {
		case slotInsert:
			maxID = queueInserts(b, ops)
		case slotPut:
			queuePuts(b, ops)
		case slotStatus:
			queueStatuses(b, ops)
		case slotRetry:
			queueRetries(b, ops)
		case slotFinish:
			queueFinishes(b, ops)
		case slotPatch:
			queuePatches(b, ops)
		case slotBudgets:
			queueRebinds(b, ops)
		case slotPayload:
			queuePayloads(b, ops)
		case slotCloseBatch:
			queueCloseBatches(b, ops)
		case slotStartBy:
			queueClearStartBys(b, ops)
		case slotHolder:
			for _, o := range ops {
				queueHolder(b, o.(store.UniqueHolderOp))
			}
		case slotError:
			queueErrors(b, ops)
		case slotDelete:
			queueDeletes(b, ops)
		case slotMisc:
			for _, o := range ops {
				queueMisc(b, o)
			}
		}
	}
	return maxID
}
