package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkCeiling_BatchInsert measures what SQLite itself takes through
// the same driver, with none of the store around it: plain transactions of
// 1,000 rows of about 100 bytes into a WITHOUT ROWID table with one
// secondary index, in WAL mode at synchronous=NORMAL (the store's default
// durability), one prepared INSERT per row (the plain ceiling issue 24
// names) or one multi-row INSERT per 32 rows (as the store's runs of new
// jobs write them). It is the ceiling the bulk enqueue figure is read
// against (BENCHMARKS.md): a job costs the store more (a row of its own
// and one of its payload's), so the ratio says how much of the ceiling
// the store and the server keep.
func BenchmarkCeiling_BatchInsert(b *testing.B) {
	for _, perRow := range []int{1, 32} {
		b.Run(fmt.Sprintf("rows_a_statement=%d", perRow), func(b *testing.B) { batchInsertCeiling(b, perRow) })
	}
}

func batchInsertCeiling(b *testing.B, perRow int) {
	const perTx = 1000
	ctx := context.Background()
	db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "ceiling.db"), DefaultCacheSize, false))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`PRAGMA journal_mode = WAL`,
		`PRAGMA synchronous = NORMAL`,
		`CREATE TABLE rows (id TEXT NOT NULL PRIMARY KEY, queue TEXT NOT NULL, body BLOB NOT NULL) STRICT, WITHOUT ROWID`,
		`CREATE INDEX rows_queue ON rows (queue)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			b.Fatal(q, err)
		}
	}
	row := "(?, ?, ?)"
	insert, err := db.PrepareContext(ctx, `INSERT INTO rows (id, queue, body) VALUES `+strings.TrimSuffix(strings.Repeat(row+", ", perRow), ", "))
	if err != nil {
		b.Fatal(err)
	}
	defer insert.Close()
	body := []byte(`{"to":"user@example.com","subject":"Welcome aboard","template":"welcome","locale":"en","user_id":1}`)
	args := make([]any, 0, 3*perRow)
	n := 0
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; done += perTx {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		stmt := tx.StmtContext(ctx, insert)
		for i := 0; i < perTx; i += perRow {
			args = args[:0]
			for range perRow {
				n++
				args = append(args, fmt.Sprintf("0ceiling%019d", n), "emails", body)
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkCeiling_StoreRows is the ceiling in the store's own terms: what
// SQLite takes, through the same driver and with nothing else around it,
// to write the rows a bulk enqueue's jobs are (the store's schema and its
// own statements: a job row among the jobs table's partial indexes and a
// payload row, 32 jobs a statement, 1,000 a transaction). What the writer
// adds to it is the store's share; what the bulk enqueue adds to the
// writer is the server's.
func BenchmarkCeiling_StoreRows(b *testing.B) {
	const perTx = 1000
	ctx := context.Background()
	db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "ceiling.db"), DefaultCacheSize, false))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if err := setWAL(ctx, conn); err != nil {
		b.Fatal(err)
	}
	if err := migrate(ctx, conn, quiet().Logger); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		b.Fatal(err)
	}
	var r runStmts
	for _, s := range r.list() {
		if *s.s, err = conn.PrepareContext(ctx, s.sql); err != nil {
			b.Fatal(s.sql, err)
		}
	}
	payload := benchJob(0).Payload
	var jobs, payloads []any
	n := 0
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; done += perTx {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		alike, pairs := tx.StmtContext(ctx, r.insertAlike), tx.StmtContext(ctx, r.insertPayloads)
		for i := 0; i+insertChunk <= perTx; i += insertChunk {
			jobs, payloads = jobs[:0], payloads[:0]
			for range insertChunk {
				n++
				id := fmt.Sprintf("0ceiling%017d", n)
				jobs = append(jobs, id)
				payloads = append(payloads, id, payload)
			}
			jobs = append(jobs, "emails", "send_email", int64(32768), int64(1), int64(1_700_000_000_000), int64(0))
			if _, err := alike.ExecContext(ctx, jobs...); err != nil {
				b.Fatal(err)
			}
			if _, err := pairs.ExecContext(ctx, payloads...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "jobs/s")
}
