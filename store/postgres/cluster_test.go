package postgres

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/postgres/pgtest"
)

// Two nodes join a fresh database: each competes for the lease in its own
// name, and the store of a term writes only while its term lasts, calling
// the cluster's commit hook and the term's.
func TestCluster_TermStoreIsFencedByItsTerm(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	ctx := context.Background()
	url := pgtest.Schema(t)
	var optsHook, termHook atomic.Int64
	join := func(holder string) *Cluster {
		c, err := JoinCluster(ctx, Options{
			URL: url, MaxConns: 2, Logger: slog.New(slog.DiscardHandler),
			OnCommit: func(store.CommitInfo) { optsHook.Add(1) },
		}, holder, "http://"+holder, "http://"+holder+"-admin", time.Minute)
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	a, b := join("a"), join("b")

	st, err := a.Acquire(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, LeaseState{Holder: "a", URL: "http://a", AdminURL: "http://a-admin", Term: 1, Held: true}, st)
	termA, err := a.OpenTerm(ctx, 1, func(store.CommitInfo) { termHook.Add(1) })
	require.NoError(t, err)
	defer termA.Close()
	kept := store.Job{ID: "0job000000000000000000001", Type: "t", Queue: "q", Status: store.Ready, ReadyAt: 1}
	require.NoError(t, termA.Append(store.InsertJob(kept)).Wait(ctx), "the leader of the term writes")
	require.Eventually(t, func() bool { return optsHook.Load() >= 1 && termHook.Load() >= 1 }, 10*time.Second, 10*time.Millisecond,
		"both commit hooks are called")

	expire(t, url)
	st, err = b.Acquire(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, "b", st.Holder)
	require.EqualValues(t, 2, st.Term)
	late := store.Job{ID: "0job000000000000000000002", Type: "t", Queue: "q", Status: store.Ready, ReadyAt: 1}
	require.ErrorIs(t, termA.Append(store.InsertJob(late)).Wait(ctx), ErrFenced, "the store of an ended term writes nothing")

	termB, err := b.OpenTerm(ctx, 2, nil)
	require.NoError(t, err)
	defer termB.Close()
	require.NoError(t, termB.Append(store.InsertJob(late)).Wait(ctx), "the new leader writes")
}
