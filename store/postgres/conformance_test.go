package postgres

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/postgres/pgtest"
	"github.com/zizq/zizq/store/sqlite"
	"github.com/zizq/zizq/store/storetest"
)

func TestDB_Conformance(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	storetest.Run(t, func(t testing.TB) store.Store { return open(t) })
}

// open opens a store on a schema of its own.
func open(t testing.TB, tune ...func(*Options)) *DB {
	t.Helper()
	opts := Options{URL: pgtest.Schema(t), MaxConns: 4, Logger: slog.New(slog.DiscardHandler), Archive: sqlite.ArchiveBody{}}
	for _, f := range tune {
		f(&opts)
	}
	db, err := Open(context.Background(), opts)
	require.NoError(t, err)
	return db
}
