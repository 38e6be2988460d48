package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/reads"
)

// cronStmts are the writer's statements on cron_groups and cron_entries.
type cronStmts struct {
	putGroup, delGroup, delGroupEntries, delAll *sql.Stmt
	putEntry, delEntry, fired                   *sql.Stmt
}

func (c *cronStmts) list() []stmtSQL {
	return []stmtSQL{
		{&c.putGroup, `INSERT OR REPLACE INTO cron_groups (name, paused, paused_at, resumed_at, timezone)
			VALUES (?, ?, ?, ?, ?)`},
		{&c.delGroup, `DELETE FROM cron_groups WHERE name = ?`},
		{&c.delGroupEntries, `DELETE FROM cron_entries WHERE group_name = ?`},
		{&c.delAll, `DELETE FROM cron_entries; DELETE FROM cron_groups`},
		{&c.putEntry, `INSERT OR REPLACE INTO cron_entries (group_name, name, expression, timezone,
			paused, paused_at, resumed_at, job, next_enqueue_at, last_enqueue_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&c.delEntry, `DELETE FROM cron_entries WHERE group_name = ? AND name = ?`},
		{&c.fired, `UPDATE cron_entries SET next_enqueue_at = ?3, last_enqueue_at = ?4
			WHERE group_name = ?1 AND name = ?2`},
	}
}

// applyCron runs one cron op inside the writer's transaction.
func (w *writer) applyCron(src store.Op) error {
	c := &w.cron
	var err error
	switch o := src.(type) {
	case store.PutCronGroupOp:
		g := &o.Group
		_, err = c.putGroup.Exec(g.Name, g.Paused, nullZero(g.PausedAt), nullZero(g.ResumedAt), nullEmpty(g.Timezone))
		return wrapOp("put cron group", g.Name, err)
	case store.DeleteCronGroupOp:
		if _, err = c.delGroupEntries.Exec(o.Name); err == nil {
			_, err = c.delGroup.Exec(o.Name)
		}
		return wrapOp("delete cron group", o.Name, err)
	case store.DeleteCronGroupsOp:
		_, err = c.delAll.Exec()
		return wrapOp("delete cron groups", "", err)
	case store.PutCronEntryOp:
		e := &o.Entry
		_, err = c.putEntry.Exec(e.Group, e.Name, e.Expression, nullEmpty(e.Timezone), e.Paused,
			nullZero(e.PausedAt), nullZero(e.ResumedAt), nonNilBytes(e.Job),
			nullZero(e.NextEnqueueAt), nullZero(e.LastEnqueueAt))
		return wrapOp("put cron entry", e.Group+"/"+e.Name, err)
	case store.DeleteCronEntryOp:
		_, err = c.delEntry.Exec(o.Group, o.Name)
		return wrapOp("delete cron entry", o.Group+"/"+o.Name, err)
	case store.CronFiredOp:
		_, err = c.fired.Exec(o.Group, o.Name, nullZero(o.NextEnqueueAt), nullZero(o.LastEnqueueAt))
		return wrapOp("record cron fire of", o.Group+"/"+o.Name, err)
	}
	return fmt.Errorf("unknown store op %T", src)
}

// nullEmpty maps "" ("unset") to NULL.
func nullEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nonNilBytes keeps a NOT NULL blob column from receiving NULL.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// CronGroups returns every cron group by name, each with its entries by
// name, from one snapshot.
func (db *DB) CronGroups(ctx context.Context) (_ []store.CronGroup, err error) {
	tx, err := db.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("list cron groups: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	groups, err := queryCronGroups(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("list cron groups: %w", err)
	}
	if err := queryCronEntries(ctx, tx, groups); err != nil {
		return nil, fmt.Errorf("list cron entries: %w", err)
	}
	return groups, nil
}

func queryCronGroups(ctx context.Context, q querier) ([]store.CronGroup, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, paused, coalesce(paused_at, 0), coalesce(resumed_at, 0),
		coalesce(timezone, '') FROM cron_groups ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.CronGroup
	for rows.Next() {
		var g store.CronGroup
		if err := rows.Scan(&g.Name, &g.Paused, &g.PausedAt, &g.ResumedAt, &g.Timezone); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// queryCronEntries reads every entry into its group of groups (sorted by
// name); entries of no group are skipped.
func queryCronEntries(ctx context.Context, q querier, groups []store.CronGroup) error {
	rows, err := q.QueryContext(ctx, reads.CronEntriesSQL)
	if err != nil {
		return err
	}
	defer rows.Close()
	return reads.CronEntries(rows, groups)
}
