package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/archive"
)

// testdata/schema1.db was written by zizq at schema version 1 (the first
// schema) through its API: budgets api-eu (while_in_flight, 3) and hourly
// (time_based, 100/1h); a ready job bound to api-eu:2, a job scheduled 30
// days ahead, and a dead job with one error record.
const (
	fixtureReady     = "03hbspbwnw9m04mdludj16jsc"
	fixtureScheduled = "03hbspbwujx5ipohxm1ewoeoe"
	fixtureDead      = "03hbspbx73m827tya0zdbnrrh"
	// fixtureNow is a moment when the fixture was written, before the dead
	// job's purge_at.
	fixtureNow = 1795983931000
)

// copyFixture puts the schema-1 database in a fresh data directory.
func copyFixture(t *testing.T) string { return copyFile(t, "schema1.db") }

// copyFile puts testdata/name in a fresh data directory as the database.
func copyFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), data, 0o640))
	return dir
}

func TestOpen_UpgradesFirstSchema(t *testing.T) {
	t.Parallel()
	dir := copyFixture(t)
	require.Equal(t, 1, userVersion(t, dir))
	ctx := context.Background()

	db, err := Open(ctx, dir, quiet())
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, len(mustMigrations(t)), userVersion(t, dir), "migrated to the latest schema")

	budgets, err := db.Budgets(ctx)
	require.NoError(t, err)
	require.Len(t, budgets, 2)
	require.Equal(t, store.Budget{Key: "api-eu", Allocation: 3, Strategy: store.WhileInFlight, CreatedAt: 1795983925074, UpdatedAt: 1795983925074}, budgets[0])
	require.Equal(t, "hourly", budgets[1].Key)
	require.Equal(t, int64(3_600_000), budgets[1].DurationMs)

	var live []store.LiveJob
	var maxID string
	require.NoError(t, db.Load(ctx, store.Loader{
		Job:   func(j store.LiveJob) error { live = append(live, j); return nil },
		Start: func(s store.LoadStart) error { maxID = s.MaxID; return nil },
	}))
	require.Len(t, live, 2)
	require.Equal(t, fixtureReady, live[0].ID)
	require.Equal(t, store.Ready, live[0].Status)
	require.Equal(t, []store.Binding{{Key: "api-eu", Cost: 2}}, live[0].Budgets)
	require.Equal(t, uint16(5), live[0].Priority)
	require.Equal(t, fixtureScheduled, live[1].ID)
	require.Equal(t, store.Scheduled, live[1].Status)
	ready, err := db.GetJob(ctx, fixtureReady, fixtureNow)
	require.NoError(t, err)
	require.Equal(t, `{"to":"a@example.com"}`, string(ready.Payload))

	dead, err := db.GetJob(ctx, fixtureDead, fixtureNow)
	require.NoError(t, err)
	require.Equal(t, store.Dead, dead.Status)
	require.Equal(t, uint32(1), dead.Attempts)
	rec, err := db.GetError(ctx, fixtureDead, 1)
	require.NoError(t, err)
	require.Equal(t, "smtp refused", rec.Message)
	require.Equal(t, "SMTPError", rec.ErrorType)

	require.Equal(t, fixtureDead, maxID)

	// The upgraded database takes writes, and uses incremental auto-vacuum.
	require.NoError(t, db.Append(store.InsertJob(job(1)), store.SetStatus(fixtureReady, store.InFlight, fixtureNow)).Wait(ctx))
	var mode int
	require.NoError(t, db.rdb.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode))
	require.Equal(t, 2, mode)
	require.NoError(t, db.IntegrityCheck(ctx))
}

// A failing migration leaves the old schema and its data as they were: the
// upgrade is one transaction.
func TestOpen_UpgradeIsAllOrNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture, inTheWay, failing string
		version, jobs              int
	}{
		{"schema1.db", "CREATE TABLE meta (x INTEGER)", "0002_meta.sql", 1, 3},
		{"schema2.db", "CREATE TABLE job_payloads (x INTEGER)", "0003_payloads.sql", 2, 6},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			dir := copyFile(t, tc.fixture)
			ctx := context.Background()
			raw, err := sql.Open("sqlite", filepath.Join(dir, FileName))
			require.NoError(t, err)
			defer raw.Close()
			// A table in the way of the migration makes it fail midway.
			_, err = raw.Exec(tc.inTheWay)
			require.NoError(t, err)
			require.NoError(t, raw.Close())

			_, err = Open(ctx, dir, quiet())
			require.ErrorContains(t, err, "migration "+tc.failing)
			require.Equal(t, tc.version, userVersion(t, dir))
			raw, err = sql.Open("sqlite", filepath.Join(dir, FileName))
			require.NoError(t, err)
			var jobs int
			require.NoError(t, raw.QueryRow("SELECT count(*) FROM jobs WHERE payload IS NOT NULL").Scan(&jobs))
			require.Equal(t, tc.jobs, jobs, "jobs and their payloads as they were")
		})
	}
}

// testdata/schema2.db was written by round 1's zizq (commit d9c3e1e, schema
// version 2) through its API, then killed with -9 and checkpointed: two
// budgets; jobs in flight (bound to both budgets), scheduled with every
// override, ready with a null payload, dead with an error record, completed
// (kept 30 days), and scheduled again after a failure (an error record).
var roundOne = struct {
	inFlight, scheduled, ready, dead, completed, retried string
}{
	inFlight:  "03hc59it9elmxxln7cyk6h9b0",
	scheduled: "03hc59itadqzta9rfd3av08yv",
	ready:     "03hc59itb4lxy6undab2n5jnp",
	dead:      "03hc59itbtt9fmqea5ncbke2j",
	completed: "03hc59itck95bclo4pa9gl7ga",
	retried:   "03hc59itde9m9u6ziwnw69wba",
}

// roundOneJobs are the fixture's jobs as they read back, in ID order.
func roundOneJobs() []store.Job {
	r := roundOne
	return []store.Job{
		{ID: r.inFlight, Queue: "emails", Type: "send_email", Priority: 5, Status: store.InFlight,
			Payload: []byte(`{"to":"a@example.com"}`), ReadyAt: 1796122815058, DequeuedAt: 1796122815734,
			Budgets: []store.Binding{{Key: "api-eu", Cost: 2}, {Key: "hourly", Cost: 1}}},
		{ID: r.scheduled, Queue: "reports", Type: "report", Priority: 32768, Status: store.Scheduled,
			Payload: []byte(`{"month":"2026-11"}`), ReadyAt: 4102444800000, RetryLimit: ptr(uint32(3)),
			Backoff:   &store.Backoff{Exponent: 2.5, BaseMs: 1000, JitterMs: 500},
			Retention: &store.Retention{CompletedMs: ptr(uint64(60000))}},
		{ID: r.ready, Queue: "emails", Type: "send_email", Priority: 7, Status: store.Ready,
			Payload: []byte(`null`), ReadyAt: 1796122815069},
		{ID: r.dead, Queue: "images", Type: "resize", Priority: 1, Status: store.Dead,
			Payload: []byte(`{"img":"x.png"}`), ReadyAt: 1796122815074, Attempts: 1, RetryLimit: ptr(uint32(0)),
			DequeuedAt: 1796122815091, FailedAt: 1796122815197, PurgeAt: 1796727615197},
		{ID: r.completed, Queue: "misc", Type: "ping", Priority: 9, Status: store.Completed,
			Payload: []byte(`[1,2,3]`), ReadyAt: 1796122815079, DequeuedAt: 1796122815318,
			CompletedAt: 1796122815424, PurgeAt: 1798714815424},
		{ID: r.retried, Queue: "misc", Type: "flaky", Priority: 8, Status: store.Scheduled,
			Payload: []byte(`{"n":1}`), ReadyAt: 4102444800000, Attempts: 1,
			DequeuedAt: 1796122815205, FailedAt: 1796122815311},
	}
}

func TestOpen_UpgradesRoundOneSchema(t *testing.T) {
	t.Parallel()
	dir := copyFile(t, "schema2.db")
	require.Equal(t, 2, userVersion(t, dir))
	ctx := context.Background()

	db, err := Open(ctx, dir, quiet())
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, len(mustMigrations(t)), userVersion(t, dir), "migrated to the latest schema")

	// Every job reads back whole, payloads from their own table.
	want := roundOneJobs()
	jobs, more, err := db.ListJobs(ctx, store.Filter{}, "", store.Asc, 100)
	require.NoError(t, err)
	require.False(t, more)
	require.Equal(t, want, jobs)
	ids := make([]string, len(want))
	for i, j := range want {
		ids[i] = j.ID
	}
	got, err := db.GetJobs(ctx, ids)
	require.NoError(t, err)
	require.ElementsMatch(t, want, got)
	var payloads int
	require.NoError(t, db.rdb.QueryRowContext(ctx, "SELECT count(*) FROM job_payloads").Scan(&payloads))
	require.Equal(t, len(want), payloads)
	var payloadColumn int
	require.NoError(t, db.rdb.QueryRowContext(ctx,
		"SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'payload'").Scan(&payloadColumn))
	require.Zero(t, payloadColumn, "jobs is narrow")

	// A dispatch reads the failure of a job that failed before the upgrade.
	read, err := db.Payloads(ctx, []string{roundOne.retried, roundOne.ready})
	require.NoError(t, err)
	require.ElementsMatch(t, []store.JobPayload{
		{ID: roundOne.retried, Payload: []byte(`{"n":1}`), FailedAt: 1796122815311},
		{ID: roundOne.ready, Payload: []byte(`null`)},
	}, read)

	recs, _, err := db.ListErrors(ctx, roundOne.dead, 0, store.Asc, 10)
	require.NoError(t, err)
	require.Equal(t, []store.ErrorRecord{{JobID: roundOne.dead, Attempt: 1, Message: "smtp refused",
		ErrorType: "SMTPError", Backtrace: "at main.go:1", DequeuedAt: 1796122815091, FailedAt: 1796122815197}}, recs)

	// Load: budgets, live jobs by (priority, id), the purge schedule, the ID mark.
	var budgets []string
	var live []string
	var purges []string
	var maxID string
	require.NoError(t, db.Load(ctx, store.Loader{
		Budget: func(b store.Budget) error { budgets = append(budgets, b.Key); return nil },
		Job:    func(j store.LiveJob) error { live = append(live, j.ID); return nil },
		Purge:  func(id string, _ int64) error { purges = append(purges, id); return nil },
		Start:  func(s store.LoadStart) error { maxID = s.MaxID; return nil },
	}))
	require.Equal(t, []string{"api-eu", "hourly"}, budgets)
	require.Equal(t, []string{roundOne.inFlight, roundOne.ready, roundOne.retried, roundOne.scheduled}, live)
	require.Equal(t, []string{roundOne.dead, roundOne.completed}, purges)
	require.Equal(t, roundOne.retried, maxID)

	// The upgraded database takes writes: a restart's recovery, new jobs,
	// deletes of old ones with their payloads and records.
	n, err := db.RecoverInFlight(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.NoError(t, db.Append(store.InsertJob(job(1)), store.DeleteJob(roundOne.dead),
		store.Finish(roundOne.ready, store.Completed, 0, 0, 5, 6)).Wait(ctx))
	_, err = db.GetJob(ctx, roundOne.dead, 0)
	require.ErrorIs(t, err, store.ErrNotFound)
	recs, _, err = db.ListErrors(ctx, roundOne.dead, 0, store.Asc, 10)
	require.NoError(t, err)
	require.Empty(t, recs, "the old job's error record goes with it")
	require.NoError(t, db.rdb.QueryRowContext(ctx, "SELECT count(*) FROM job_payloads").Scan(&payloads))
	require.Equal(t, len(want), payloads, "one payload in, one out")
	require.NoError(t, db.IntegrityCheck(ctx))
}

func TestSnapshot_ArchiveRestoresElsewhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apply(t, store.PutBudget(store.Budget{Key: "k", Allocation: 2, Strategy: store.WhileInFlight, CreatedAt: 1, UpdatedAt: 1}))
	for n := range 300 {
		b.apply(t, store.InsertJob(bigJob(n)))
	}
	b.apply(t, store.SetStatus(id(3), store.InFlight, 5), store.DeleteJob(id(4)))

	snap, err := b.db.Snapshot(b.ctx)
	require.NoError(t, err)
	// Writes after the snapshot are not in it.
	b.apply(t, store.InsertJob(job(1000)))
	var backup bytes.Buffer
	require.NoError(t, snap.WriteArchive(&backup))
	require.NoError(t, snap.Close())
	left, _ := filepath.Glob(filepath.Join(b.dir, snapshotPrefix+"*"))
	require.Empty(t, left, "the snapshot file is removed")

	size, err := archive.Check(bytes.NewReader(backup.Bytes()))
	require.NoError(t, err)
	require.Positive(t, size)
	_, err = archive.Check(bytes.NewReader(backup.Bytes()[:backup.Len()/2]))
	require.Error(t, err, "a truncated archive is refused")

	file := filepath.Join(t.TempDir(), "backup.tar.gz")
	require.NoError(t, os.WriteFile(file, backup.Bytes(), 0o600))
	target := filepath.Join(t.TempDir(), "root", "data")
	require.NoError(t, Restore(b.ctx, file, target))
	require.ErrorIs(t, Restore(b.ctx, file, target), ErrTargetNotEmpty, "never over existing data")

	db, err := Open(b.ctx, target, quiet())
	require.NoError(t, err)
	defer db.Close()
	ids, err := db.JobIDs(b.ctx, store.Filter{})
	require.NoError(t, err)
	require.Len(t, ids, 299)
	require.NotContains(t, ids, id(4))
	require.NotContains(t, ids, id(1000))
	j, err := db.GetJob(b.ctx, id(3), 0)
	require.NoError(t, err)
	require.Equal(t, store.InFlight, j.Status, "a snapshot is the store as it was; recovery runs at start")
	budgets, err := db.Budgets(b.ctx)
	require.NoError(t, err)
	require.Len(t, budgets, 1)
	require.NoError(t, db.IntegrityCheck(b.ctx))
}

func TestRestore_Refuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	write := func(data []byte) string {
		p := filepath.Join(t.TempDir(), "in")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}

	// A bare database file restores too; a newer schema does not.
	dir := copyFixture(t)
	raw, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	require.NoError(t, err)
	_, err = raw.Exec("PRAGMA user_version = 99")
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	newer, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	fixture, err := os.ReadFile(filepath.Join("testdata", "schema1.db"))
	require.NoError(t, err)

	target := filepath.Join(t.TempDir(), "data")
	err = Restore(ctx, write(newer), target)
	require.ErrorContains(t, err, "backup schema version 99 is newer than this zizq supports")
	entries, _ := os.ReadDir(target)
	require.Empty(t, entries, "a refused restore leaves nothing behind")

	require.ErrorContains(t, Restore(ctx, write([]byte("hello")), target), "not a zizq backup")
	require.ErrorContains(t, Restore(ctx, filepath.Join(t.TempDir(), "missing"), target), "open backup")

	require.NoError(t, Restore(ctx, write(fixture), target))
	require.FileExists(t, filepath.Join(target, FileName))
	raw, err = sql.Open("sqlite", filepath.Join(target, FileName))
	require.NoError(t, err)
	defer raw.Close()
	var mode int
	require.NoError(t, raw.QueryRow("PRAGMA auto_vacuum").Scan(&mode))
	require.Equal(t, 2, mode, "the restore converts the database to incremental auto-vacuum")
}

// A database of schema 6 (before budget families) upgrades with its rows
// read as they were: no template, no pause, no fair tag.
func TestOpen_UpgradesToBudgetFamilies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	raw, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	require.NoError(t, err)
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	require.NoError(t, err)
	upTo6 := fstest.MapFS{}
	for _, m := range mustMigrations(t)[:6] {
		upTo6["migrations/"+m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
	}
	require.NoError(t, migrateFS(ctx, conn, upTo6, quiet().Logger))
	_, err = conn.ExecContext(ctx, `INSERT INTO budgets VALUES ('b', 2, 'time_based', 1000, 3, 10, 11);
		INSERT INTO jobs (id, queue, type, priority, status, ready_at, attempts, budgets)
		VALUES ('`+id(1)+`', 'q', 't', 5, 1, 20, 0, '[{"key":"b","cost":1}]')`)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.NoError(t, raw.Close())

	db, err := Open(ctx, dir, quiet())
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, len(mustMigrations(t)), userVersion(t, dir))
	old := store.Budget{Key: "b", Allocation: 2, Strategy: store.TimeBased, DurationMs: 1000, Burst: 3, CreatedAt: 10, UpdatedAt: 11}
	budgets, err := db.Budgets(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.Budget{old}, budgets)
	j, err := db.GetJob(ctx, id(1), 0)
	require.NoError(t, err)
	require.Zero(t, j.FairTag)
	var live []store.LiveJob
	require.NoError(t, db.Load(ctx, store.Loader{Job: func(j store.LiveJob) error { live = append(live, j); return nil }}))
	require.Equal(t, []store.LiveJob{{ID: id(1), Queue: "q", Type: "t", Priority: 5, Status: store.Ready, ReadyAt: 20,
		Budgets: []store.Binding{{Key: "b", Cost: 1}}}}, live)

	// The old rows take the new fields.
	old.PerKey, old.Paused, old.PausedUntil = &store.BudgetTemplate{Allocation: 1, Strategy: store.WhileInFlight}, true, 99
	tagged := job(2)
	tagged.FairTag = 30
	require.NoError(t, db.Append(store.PutBudget(old), store.InsertJob(tagged)).Wait(ctx))
	budgets, err = db.Budgets(ctx)
	require.NoError(t, err)
	require.Equal(t, []store.Budget{old}, budgets)
	j, err = db.GetJob(ctx, id(2), 0)
	require.NoError(t, err)
	require.Equal(t, int64(30), j.FairTag)
	require.NoError(t, db.IntegrityCheck(ctx))
}
