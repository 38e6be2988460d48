package postgres

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/postgres/pgtest"
	"github.com/zizq/zizq/store/sqlite"
	"github.com/zizq/zizq/store/storetest"
)

// TestDB_BackupRestoresEverything backs a store up and restores the archive
// into another: the same content, the high-water mark included, read from
// the backup's snapshot (not the store's reads) and written back through
// the archive's database.
func TestDB_BackupRestoresEverything(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	src := open(t)
	defer src.Close()
	mark := storetest.Populate(t, src)

	file := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, src.Backup(ctx, f))
	require.NoError(t, f.Close())

	opts := Options{URL: pgtest.Schema(t), Archive: sqlite.ArchiveBody{}, Logger: slog.New(slog.DiscardHandler)}
	require.NoError(t, Restore(ctx, file, opts))
	require.ErrorIs(t, Restore(ctx, file, opts), ErrNotEmpty, "never over existing data")
	dst, err := Open(ctx, opts)
	require.NoError(t, err)
	defer dst.Close()
	storetest.RequireSameContent(t, src, dst)
	var got string
	require.NoError(t, dst.Load(ctx, store.Loader{Start: func(s store.LoadStart) error { got = s.MaxID; return nil }}))
	require.Equal(t, mark, got)

	t.Run("NoArchive", func(t *testing.T) {
		db := open(t, func(o *Options) { o.Archive = nil })
		defer db.Close()
		require.ErrorIs(t, db.Backup(ctx, f), errNoArchive)
		require.ErrorIs(t, Restore(ctx, file, Options{URL: pgtest.Schema(t)}), errNoArchive)
	})
}
