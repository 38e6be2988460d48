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
	ctx := context.Background()
	conn := ceilingConn(b)
	for _, q := range []string{
		`CREATE TABLE rows (id TEXT NOT NULL PRIMARY KEY, queue TEXT NOT NULL, body BLOB NOT NULL) STRICT, WITHOUT ROWID`,
		`CREATE INDEX rows_queue ON rows (queue)`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			b.Fatal(q, err)
		}
	}
	row := "(?, ?, ?)"
	insert, err := conn.PrepareContext(ctx, `INSERT INTO rows (id, queue, body) VALUES `+strings.TrimSuffix(strings.Repeat(row+", ", perRow), ", "))
	if err != nil {
		b.Fatal(err)
	}
	defer insert.Close()
	body := []byte(`{"to":"user@example.com","subject":"Welcome aboard","template":"welcome","locale":"en","user_id":1}`)
	args := make([]any, 0, 3*perRow)
	timeTransactions(b, conn, "rows/s", func(tx *sql.Tx, n int) int {
		stmt := tx.StmtContext(ctx, insert)
		written := 0
		for ; written < ceilingTx; written += perRow {
			args = args[:0]
			for k := range perRow {
				args = append(args, fmt.Sprintf("0ceiling%019d", n+written+k), "emails", body)
			}
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
		}
		return written
	})
}

// ceilingTx is how many rows (or jobs) one transaction of a ceiling writes.
const ceilingTx = 1000

// ceilingConn returns the one connection of a new database in WAL mode at
// synchronous=NORMAL, the store's default durability.
func ceilingConn(b *testing.B) *sql.Conn {
	ctx := context.Background()
	db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "ceiling.db"), DefaultCacheSize, false))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	if err := setWAL(ctx, conn); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		b.Fatal(err)
	}
	return conn
}

// timeTransactions runs write in transactions until b.N rows are written
// and reports the rate in unit. write writes rows numbered from n on and
// returns how many it wrote.
func timeTransactions(b *testing.B, conn *sql.Conn, unit string, write func(tx *sql.Tx, n int) int) {
	n := 0
	b.ResetTimer()
	start := time.Now()
	for n < b.N {
		n += writeTransaction(b, conn, n, write)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), unit)
}

func writeTransaction(b *testing.B, conn *sql.Conn, n int, write func(tx *sql.Tx, n int) int) int {
	tx, err := conn.BeginTx(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	// After a Fatal in write, so that the connection can close.
	defer func() { _ = tx.Rollback() }()
	wrote := write(tx, n)
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return wrote
}

// BenchmarkCeiling_StoreRows is the ceiling in the store's own terms: what
// SQLite takes, through the same driver and with nothing else around it,
// to write the rows a bulk enqueue's jobs are (the store's schema and its
// own statements: a job row among the jobs table's partial indexes and a
// payload row, 32 jobs a statement, about 1,000 a transaction). What the
// writer adds to it is the store's share; what the bulk enqueue adds to
// the writer is the server's.
func BenchmarkCeiling_StoreRows(b *testing.B) {
	ctx := context.Background()
	conn := ceilingConn(b)
	if err := migrate(ctx, conn, quiet().Logger); err != nil {
		b.Fatal(err)
	}
	var r runStmts
	for _, s := range r.list() {
		var err error
		if *s.s, err = conn.PrepareContext(ctx, s.sql); err != nil {
			b.Fatal(s.sql, err)
		}
	}
	payload := benchJob(0).Payload
	var jobs, payloads []any
	timeTransactions(b, conn, "jobs/s", func(tx *sql.Tx, n int) int {
		alike, pairs := tx.StmtContext(ctx, r.insertAlike), tx.StmtContext(ctx, r.insertPayloads)
		written := 0
		for ; written+insertChunk <= ceilingTx; written += insertChunk {
			jobs, payloads = jobs[:0], payloads[:0]
			for k := range insertChunk {
				id := fmt.Sprintf("0ceiling%017d", n+written+k)
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
		return written
	})
}
