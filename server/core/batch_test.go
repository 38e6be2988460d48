package core

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/batchexpr"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// inProcess evaluates batch programs in the test process (the programs
// here are harmless), calling before first: a test changes the pending
// job there, between the read of its state and the commit.
type inProcess struct {
	before func(batchexpr.Task)
}

func (e *inProcess) Run(ctx context.Context, t batchexpr.Task) (batchexpr.Answer, error) {
	if e.before != nil {
		e.before(t)
	}
	lim := batchexpr.Limits{Timeout: time.Second, MaxPayloadBytes: 1 << 20}
	incoming, err := batchexpr.Decode(t.New)
	if err != nil {
		return batchexpr.Answer{}, err
	}
	if t.Check != nil {
		p, err := batchexpr.Compile(*t.Check)
		if err != nil {
			return batchexpr.Answer{}, err
		}
		if err := p.DryRun(ctx, incoming, lim); err != nil {
			return batchexpr.Answer{}, err
		}
	}
	if t.Into == nil {
		return batchexpr.Answer{}, nil
	}
	p, err := batchexpr.Compile(*t.Into)
	if err != nil {
		return batchexpr.Answer{}, err
	}
	existing, err := batchexpr.Decode(t.Existing)
	if err != nil {
		return batchexpr.Answer{}, err
	}
	folds, out, err := p.Fold(ctx, existing, incoming, lim)
	return batchexpr.Answer{Folds: folds, Payload: out}, err
}

func (e *inProcess) Close() {}

func startCore(t *testing.T, ev BatchEvaluator) *Service {
	t.Helper()
	return startCoreWith(t, Options{Batches: ev})
}

// startCoreWith starts a service with opts over SQLite in a fresh
// directory, with the engine's defaults and a quiet logger.
func startCoreWith(t *testing.T, opts Options) *Service {
	t.Helper()
	dir := t.TempDir()
	opts.Open = func(ctx context.Context) (Store, error) {
		return sqlite.Open(ctx, dir, sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	}
	opts.Engine = DefaultEngineConfig()
	opts.Logger = slog.New(slog.DiscardHandler)
	s := Start(context.Background(), opts)
	require.NoError(t, s.Wait(context.Background()))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func batchedJob(payload string) NewJob {
	return NewJob{Type: "t", Queue: "q", Priority: 1, Payload: []byte(payload),
		Batch: &store.BatchConfig{Key: "k", When: "true", Fold: "$existing + $new"}}
}

// A pending job dispatched or deleted while an item's fold into it is
// evaluated: the engine refuses the plan and the item is decided again,
// against the key as it is now.
func TestService_EnqueueDecidesAgainWhenThePendingJobMoves(t *testing.T) {
	t.Parallel()
	for name, move := range map[string]func(t *testing.T, s *Service, id string){
		"Dispatched": func(t *testing.T, s *Service, id string) {
			tk, err := s.Take(nil, 1)
			require.NoError(t, err)
			frames, err := tk.Next(context.Background(), nil)
			require.NoError(t, err)
			require.Len(t, frames, 1)
			require.Equal(t, id, frames[0].ID)
			require.Equal(t, "[1]", string(frames[0].Payload), "dispatched before the fold, with the payload it had")
		},
		"Deleted": func(t *testing.T, s *Service, id string) {
			require.NoError(t, s.DeleteJob(context.Background(), id))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ev := &inProcess{}
			s := startCore(t, ev)
			ctx := context.Background()
			first, err := s.Enqueue(ctx, []NewJob{batchedJob("[1]")})
			require.NoError(t, err)
			p := first[0].Job.ID

			folds := 0
			ev.before = func(task batchexpr.Task) {
				if task.Into != nil {
					if folds++; folds == 1 {
						move(t, s, p)
					}
				}
			}
			got, err := s.Enqueue(ctx, []NewJob{batchedJob("[2]")})
			require.NoError(t, err)
			require.Equal(t, 1, folds, "decided again: no pending job to fold into")
			require.False(t, got[0].Folded)
			require.NotEqual(t, p, got[0].Job.ID)
			pending, ok := s.engine.PendingBatch("k")
			require.True(t, ok)
			require.Equal(t, got[0].Job.ID, pending.ID)
			j, err := s.Job(ctx, got[0].Job.ID)
			require.NoError(t, err)
			require.Equal(t, "[2]", string(j.Payload))
		})
	}
}

// The payload a fold reads comes from the store once the cache no longer
// has it (taken, evicted, or after a restart).
func TestService_FoldReadsThePayloadFromTheStore(t *testing.T) {
	t.Parallel()
	s := startCore(t, &inProcess{})
	ctx := context.Background()
	first, err := s.Enqueue(ctx, []NewJob{batchedJob("[1]")})
	require.NoError(t, err)
	s.cache.take(first[0].Job.ID)
	got, err := s.Enqueue(ctx, []NewJob{batchedJob("[2]"), batchedJob("[3]")})
	require.NoError(t, err)
	require.True(t, got[0].Folded)
	require.True(t, got[1].Folded)
	j, err := s.Job(ctx, first[0].Job.ID)
	require.NoError(t, err)
	require.Equal(t, "[1,2,3]", string(j.Payload))
	cached, ok := s.cache.peek(first[0].Job.ID)
	require.True(t, ok, "the folded payload is cached for the job's dispatch")
	require.Equal(t, "[1,2,3]", string(cached))
}

func TestKeyLocks(t *testing.T) {
	t.Parallel()
	l := newKeyLocks()
	ctx := context.Background()
	unlock, err := l.lock(ctx, []string{"b", "a", "b"})
	require.NoError(t, err)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = l.lock(short, []string{"c", "a"})
	require.ErrorIs(t, err, context.DeadlineExceeded, "a is held")
	other, err := l.lock(ctx, []string{"c"})
	require.NoError(t, err, "c was released when the wait gave up")
	other()

	done := make(chan struct{})
	go func() {
		u, err := l.lock(ctx, []string{"a"})
		require.NoError(t, err)
		u()
		close(done)
	}()
	unlock()
	<-done
	require.Empty(t, l.held, "no lock is left behind")
}

// A sandbox without room for a fold is the service being busy, not the
// client's mistake: a cron fire retries it instead of skipping it.
func TestBatchRefusal_BusyIsTransient(t *testing.T) {
	t.Parallel()
	err := batchRefusal(2, fmt.Errorf("%w: every worker is taken", batchexpr.ErrBusy))
	var ce *Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, KindBusy, ce.Kind)
	require.Equal(t, 2, ce.Item)
	require.ErrorIs(t, err, batchexpr.ErrBusy)
	require.False(t, isRefusal(err), "a cron fire retries it")

	err = batchRefusal(0, &batchexpr.Error{Stage: batchexpr.StageFold, Msg: "fold expression took longer than 1s"})
	require.ErrorAs(t, err, &ce)
	require.Equal(t, KindUnprocessable, ce.Kind)
	require.True(t, isRefusal(err))
}
