package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/reads"
)

// queueCron queues one cron op.
func queueCron(b *pgx.Batch, op store.Op) {
	switch o := op.(type) {
	case store.PutCronGroupOp:
		g := &o.Group
		b.Queue(`INSERT INTO cron_groups (name, paused, paused_at, resumed_at, timezone)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at,
				resumed_at = excluded.resumed_at, timezone = excluded.timezone`,
			g.Name, g.Paused, nullZero(g.PausedAt), nullZero(g.ResumedAt), nullEmpty(g.Timezone))
	case store.DeleteCronGroupOp:
		b.Queue(`DELETE FROM cron_entries WHERE group_name = $1`, o.Name)
		b.Queue(`DELETE FROM cron_groups WHERE name = $1`, o.Name)
	case store.DeleteCronGroupsOp:
		b.Queue(`DELETE FROM cron_entries`)
		b.Queue(`DELETE FROM cron_groups`)
	case store.PutCronEntryOp:
		e := &o.Entry
		b.Queue(`INSERT INTO cron_entries (group_name, name, expression, timezone, paused, paused_at,
				resumed_at, job, next_enqueue_at, last_enqueue_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (group_name, name) DO UPDATE SET expression = excluded.expression,
				timezone = excluded.timezone, paused = excluded.paused, paused_at = excluded.paused_at,
				resumed_at = excluded.resumed_at, job = excluded.job,
				next_enqueue_at = excluded.next_enqueue_at, last_enqueue_at = excluded.last_enqueue_at`,
			e.Group, e.Name, e.Expression, nullEmpty(e.Timezone), e.Paused, nullZero(e.PausedAt),
			nullZero(e.ResumedAt), nonNilBytes(e.Job), nullZero(e.NextEnqueueAt), nullZero(e.LastEnqueueAt))
	case store.DeleteCronEntryOp:
		b.Queue(`DELETE FROM cron_entries WHERE group_name = $1 AND name = $2`, o.Group, o.Name)
	case store.CronFiredOp:
		b.Queue(`UPDATE cron_entries SET next_enqueue_at = $3, last_enqueue_at = $4
			WHERE group_name = $1 AND name = $2`, o.Group, o.Name, nullZero(o.NextEnqueueAt), nullZero(o.LastEnqueueAt))
	}
}

// nullEmpty maps "" ("unset") to NULL.
func nullEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// CronGroups returns every cron group by name, each with its entries by
// name, from one snapshot.
func (db *DB) CronGroups(ctx context.Context) ([]store.CronGroup, error) {
	var groups []store.CronGroup
	err := readTx(ctx, db.pool, func(tx pgx.Tx) error {
		var err error
		if groups, err = queryCronGroups(ctx, tx); err != nil {
			return err
		}
		return queryCronEntries(ctx, tx, groups)
	})
	if err != nil {
		return nil, fmt.Errorf("list cron groups: %w", err)
	}
	return groups, nil
}

func queryCronGroups(ctx context.Context, q querier) ([]store.CronGroup, error) {
	rows, err := q.Query(ctx, `SELECT name, paused, coalesce(paused_at, 0), coalesce(resumed_at, 0),
		coalesce(timezone, '') FROM cron_groups ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.CronGroup, error) {
		var g store.CronGroup
		err := r.Scan(&g.Name, &g.Paused, &g.PausedAt, &g.ResumedAt, &g.Timezone)
		return g, err
	})
}

// queryCronEntries reads every entry into its group of groups (sorted by
// name); entries of no group are skipped.
func queryCronEntries(ctx context.Context, q querier, groups []store.CronGroup) error {
	rows, err := q.Query(ctx, reads.CronEntriesSQL)
	if err != nil {
		return err
	}
	defer rows.Close()
	return reads.CronEntries(rows, groups)
}
