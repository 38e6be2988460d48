package sqlite

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testBundle is what a test works with: an open store in its own directory.
type testBundle struct {
	db  *DB
	dir string
	ctx context.Context
}

// quiet returns Options whose logger discards.
func quiet() Options { return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))} }

func withBatch(n int) Options {
	o := quiet()
	o.BatchSize = n
	return o
}

// setup opens a store in t.TempDir(), closed when the test ends.
func setup(t testing.TB, opts ...func(*Options)) *testBundle {
	t.Helper()
	o := quiet()
	for _, f := range opts {
		f(&o)
	}
	dir := t.TempDir()
	ctx := context.Background()
	db, err := Open(ctx, dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return &testBundle{db: db, dir: dir, ctx: ctx}
}

// apply appends ops as one group and waits for their commit.
func (b *testBundle) apply(t testing.TB, ops ...store.Op) {
	t.Helper()
	require.NoError(t, b.db.Append(ops...).Wait(b.ctx))
}

// ids returns the IDs of every stored job, ascending (purged ones included).
func (b *testBundle) ids(t testing.TB) []string {
	t.Helper()
	ids, err := b.db.JobIDs(b.ctx, store.Filter{})
	require.NoError(t, err)
	return ids
}

// id returns a job ID that sorts by n, 25 characters like a SCRU128 ID.
func id(n int) string { return fmt.Sprintf("0job%021d", n) }

// job returns a ready job with the given ID number and only required fields.
func job(n int) store.Job {
	return store.Job{
		ID:       id(n),
		Type:     "send_email",
		Queue:    "default",
		Priority: 32768,
		Status:   store.Ready,
		Payload:  []byte(fmt.Sprintf(`{"n":%d}`, n)),
		ReadyAt:  1_700_000_000_000 + int64(n),
	}
}

func ptr[T any](v T) *T { return &v }
