package storetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// testLifecycle checks Backup, Compact, Sizes and Close.
func testLifecycle(t *testing.T, newB func(testing.TB) *bundle) {
	t.Run("Backup", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)), store.PutBudget(store.Budget{Key: "k", Allocation: 1, Strategy: store.WhileInFlight}))
		var buf bytes.Buffer
		require.NoError(t, b.s.Backup(b.ctx, &buf))

		// A whole tar.gz with at least one file in it.
		zr, err := gzip.NewReader(&buf)
		require.NoError(t, err)
		tr := tar.NewReader(zr)
		files := 0
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			if hdr.Typeflag == tar.TypeReg {
				files++
				_, err := io.Copy(io.Discard, tr)
				require.NoError(t, err)
			}
		}
		require.Positive(t, files)
		require.NoError(t, zr.Close())

		// The store goes on as before.
		b.apply(t, store.InsertJob(job(2)))
		require.Equal(t, ids(1, 2), b.ids(t))
	})

	t.Run("Sizes", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		b.apply(t, store.InsertJob(job(1)))
		data, log := b.s.Sizes()
		require.Positive(t, data+log)
	})

	t.Run("Compact", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		// Large payloads, most of them deleted: space to give back.
		big := bytes.Repeat([]byte("x"), 8<<10)
		var ops, dels []store.Op
		for n := range 400 {
			ops = append(ops, store.InsertJob(with(n, func(j *store.Job) { j.Payload = fmt.Appendf(nil, `"%s%d"`, big, n) })))
			if n >= 10 {
				dels = append(dels, store.DeleteJob(id(n)))
			}
		}
		b.apply(t, ops...)
		require.NoError(t, b.s.Compact(b.ctx))
		full, _ := b.s.Sizes()
		b.apply(t, dels...)

		require.NoError(t, b.s.Compact(b.ctx))
		data, log := b.s.Sizes()
		require.Less(t, data, full/2, "the space of deleted jobs goes back to the file system")
		require.Zero(t, log, "the log is empty")

		// Nothing live is lost, and the store goes on.
		require.Equal(t, ids(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), b.ids(t))
		require.Equal(t, fmt.Appendf(nil, `"%s%d"`, big, 3), b.get(t, id(3)).Payload)
		b.apply(t, store.InsertJob(job(1000)))
		require.Len(t, b.ids(t), 11)
	})

	t.Run("Close", func(t *testing.T) {
		t.Parallel()
		b := newB(t)
		var ps []store.Pending
		for n := range 100 {
			ps = append(ps, b.s.Append(store.InsertJob(job(n))))
		}
		require.NoError(t, b.s.Close())
		for _, p := range ps {
			require.NoError(t, p.Wait(b.ctx), "everything appended before Close commits")
		}
		err := b.s.Append(store.InsertJob(job(1000))).Wait(b.ctx)
		require.ErrorIs(t, err, store.ErrUnavailable)
		require.NoError(t, b.s.Barrier(b.ctx))
		require.NoError(t, b.s.Close(), "Close is idempotent")
	})
}
