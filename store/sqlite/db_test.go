package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/internal/migration"
)

func TestOpen_JournalModeIsWAL(t *testing.T) {
	t.Parallel()
	b := setup(t)

	mode, err := b.db.JournalMode(b.ctx)
	require.NoError(t, err)
	require.Equal(t, "wal", mode)
}

func TestOpen_CreatesDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "b")
	db, err := Open(context.Background(), dir, quiet())
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.FileExists(t, filepath.Join(dir, FileName))
}

func TestOpen_MigrationsIdempotentOnReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()

	db, err := Open(ctx, dir, quiet())
	require.NoError(t, err)
	require.NoError(t, db.Append(store.InsertJob(job(1))).Wait(ctx))
	require.NoError(t, db.Close())

	for range 2 {
		db, err = Open(ctx, dir, quiet())
		require.NoError(t, err)
		got, err := db.GetJob(ctx, id(1), 0)
		require.NoError(t, err)
		require.Equal(t, job(1), got)
		require.NoError(t, db.Close())
	}
	require.Equal(t, len(mustMigrations(t)), userVersion(t, dir))
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := Open(ctx, dir, quiet())
	require.NoError(t, err)
	require.NoError(t, db.Close())

	latest := len(mustMigrations(t))
	raw, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	require.NoError(t, err)
	_, err = raw.Exec("PRAGMA user_version = 99")
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	_, err = Open(ctx, dir, quiet())
	require.EqualError(t, err, "database schema version 99 is newer than this zizq supports ("+strconv.Itoa(latest)+")")
}

func TestMigrate_FailureLeavesDatabaseUntouched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	raw, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	require.NoError(t, err)
	defer raw.Close()
	conn, err := raw.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()

	fsys := fstest.MapFS{
		"migrations/0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);")},
		"migrations/0002_b.sql": {Data: []byte("CREATE TABLE b (x INTEGER); THIS IS NOT SQL;")},
	}
	err = migrateFS(ctx, conn, fsys, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorContains(t, err, "migration 0002_b.sql")

	var version, tables int
	require.NoError(t, conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version))
	require.NoError(t, conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables))
	require.Zero(t, version)
	require.Zero(t, tables)
}

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		files fstest.MapFS
		err   string
	}{
		"Gap": {
			files: fstest.MapFS{"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
			err:   "migration 0003_c.sql: expected version 2",
		},
		"BadName": {
			files: fstest.MapFS{"migrations/init.sql": {}},
			err:   "migration init.sql: name must start with a positive version number",
		},
		"Sorted": {
			files: fstest.MapFS{"migrations/0002_b.sql": {}, "migrations/0001_a.sql": {}, "migrations/README": {}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ms, err := loadMigrations(tc.files)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, ms, 2)
			require.Equal(t, "0001_a.sql", ms[0].Name)
		})
	}
}

func TestWrapUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "x.db"))
	require.NoError(t, err)
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	_, err = raw.Exec("CREATE TABLE t (v BLOB)")
	require.NoError(t, err)

	t.Run("Full", func(t *testing.T) {
		var pages int
		require.NoError(t, raw.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages))
		_, err := raw.Exec("PRAGMA max_page_count = " + strconv.Itoa(pages))
		require.NoError(t, err)
		_, err = raw.Exec("INSERT INTO t VALUES (zeroblob(100000))")
		require.Error(t, err)
		err = wrapWrite("insert", err)
		require.ErrorIs(t, err, store.ErrUnavailable)
		require.EqualError(t, err, "storage unavailable: database or disk is full")
		_, err = raw.Exec("PRAGMA max_page_count = 1000000")
		require.NoError(t, err)
	})
	t.Run("ReadOnly", func(t *testing.T) {
		_, err := raw.Exec("PRAGMA query_only = 1")
		require.NoError(t, err)
		defer raw.Exec("PRAGMA query_only = 0")
		_, err = raw.Exec("INSERT INTO t VALUES (1)")
		require.Error(t, err)
		require.ErrorIs(t, wrapWrite("insert", err), store.ErrUnavailable)
	})
	t.Run("Other", func(t *testing.T) {
		_, err := raw.Exec("INSERT INTO nope VALUES (1)")
		require.Error(t, err)
		err = wrapWrite("insert", err)
		require.False(t, errors.Is(err, store.ErrUnavailable))
		require.True(t, strings.HasPrefix(err.Error(), "insert: "), err.Error())
	})
}

func TestDB_WriteFailsUnavailableWhenDiskFull(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.apply(t, store.InsertJob(job(1)))

	// Cap the database at its current size, as a full disk would. The
	// writer is idle after apply; sql.Conn serialises the two users.
	var pages int
	require.NoError(t, b.db.w.conn.QueryRowContext(b.ctx, "PRAGMA page_count").Scan(&pages))
	_, err := b.db.w.conn.ExecContext(b.ctx, "PRAGMA max_page_count = "+strconv.Itoa(pages))
	require.NoError(t, err)

	big := job(2)
	big.Payload = []byte(`"` + strings.Repeat("x", 200_000) + `"`)
	err = b.db.Append(store.InsertJob(big), store.PutBudget(store.Budget{Key: "k"})).Wait(b.ctx)
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.EqualError(t, err, "storage unavailable: database or disk is full")

	// Reads keep working and nothing of the group was written.
	require.Equal(t, []string{id(1)}, b.ids(t))
	budgets, err := b.db.Budgets(b.ctx)
	require.NoError(t, err)
	require.Empty(t, budgets)

	_, err = b.db.w.conn.ExecContext(b.ctx, "PRAGMA max_page_count = 4294967294")
	require.NoError(t, err)
	b.apply(t, store.InsertJob(big))
	require.Equal(t, []string{id(1), id(2)}, b.ids(t))
}

func mustMigrations(t *testing.T) []migration.Migration {
	t.Helper()
	ms, err := loadMigrations(migrationFiles)
	require.NoError(t, err)
	return ms
}

func userVersion(t *testing.T, dir string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	require.NoError(t, err)
	defer raw.Close()
	var v int
	require.NoError(t, raw.QueryRow("PRAGMA user_version").Scan(&v))
	return v
}
