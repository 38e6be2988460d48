package core

import (
	"context"
	"fmt"
	"io"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// Store is what the core needs of the store.
type Store interface {
	Append(ops ...store.Op) *store.Pending
	Barrier(ctx context.Context) error
	RecoverInFlight(ctx context.Context) (int64, error)
	Budgets(ctx context.Context) ([]store.Budget, error)
	LiveJobs(ctx context.Context, fn func(store.Job) error) error
	PurgeSchedule(ctx context.Context, fn func(id string, at int64) error) error
	MaxJobID(ctx context.Context) (string, error)
	GetJob(ctx context.Context, id string, now int64) (store.Job, error)
	ListJobs(ctx context.Context, f store.Filter, from string, o store.Order, limit int) ([]store.Job, bool, error)
	CountJobs(ctx context.Context, f store.Filter) (int64, error)
	JobIDs(ctx context.Context, f store.Filter) ([]string, error)
	Queues(ctx context.Context) ([]string, error)
	ListErrors(ctx context.Context, jobID string, from uint32, o store.Order, limit int) ([]store.ErrorRecord, bool, error)
	GetError(ctx context.Context, jobID string, attempt uint32) (store.ErrorRecord, error)
	Sizes() (dbBytes, walBytes int64)
	Snapshot(ctx context.Context) (*store.Snapshot, error)
	Close() error
}

// state is what start-up reads from the store.
type state struct {
	budgets []store.Budget
	jobs    func(yield func(store.Job) error) error
	purges  []engine.Purge
	maxID   string
}

func loadState(ctx context.Context, st Store) (state, error) {
	var s state
	var err error
	if s.budgets, err = st.Budgets(ctx); err != nil {
		return s, fmt.Errorf("load budgets: %w", err)
	}
	s.jobs = func(yield func(store.Job) error) error {
		if err := st.LiveJobs(ctx, yield); err != nil {
			return fmt.Errorf("load jobs: %w", err)
		}
		return nil
	}
	if err := st.PurgeSchedule(ctx, func(id string, at int64) error {
		s.purges = append(s.purges, engine.Purge{ID: id, At: at})
		return nil
	}); err != nil {
		return s, fmt.Errorf("load purge schedule: %w", err)
	}
	if s.maxID, err = st.MaxJobID(ctx); err != nil {
		return s, fmt.Errorf("load the largest job ID: %w", err)
	}
	return s, nil
}

// getJobs reads the stored rows of jobs, in one query; missing ones are
// left out.
func getJobs(ctx context.Context, st Store, ids []string) ([]store.Job, error) {
	rows, _, err := st.ListJobs(ctx, store.Filter{Within: store.NewIDSet(ids)}, "", store.Asc, len(ids))
	return rows, err
}

// Backup writes a consistent snapshot of the store as a tar.gz archive.
func (s *Service) Backup(ctx context.Context, w io.Writer, started func(size int64)) error {
	if err := s.ready(); err != nil {
		return err
	}
	snap, err := s.store.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer func() {
		if err := snap.Close(); err != nil {
			s.log.Warn("backup cleanup failed", "err", err)
		}
	}()
	started(snap.Size())
	return snap.WriteArchive(w)
}
