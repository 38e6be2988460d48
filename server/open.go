package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// Options gather everything needed to start a server on a data directory.
type Options struct {
	DataDir string
	Store   sqlite.Options
	Engine  engine.Config
	HTTP    Config
	Clock   clock.Clock  // nil: the real clock
	Logger  *slog.Logger // nil: slog.Default()

	// beforeRestore, when set, runs once the store is open and before the
	// engine is rebuilt (tests hold the start there).
	beforeRestore func(context.Context)
}

// journal adapts the store's Append to the engine.
type journal struct{ db store.Store }

func (j journal) Append(ops ...store.Op) engine.Waiter { return j.db.Append(ops...) }

// Open opens the store, returns jobs left in flight by the last run to
// ready, rebuilds the engine from the store and returns a server ready to
// Serve (Start does the same in the background). Close it to close the
// store.
func Open(ctx context.Context, opts Options) (*Server, error) {
	s := Start(ctx, opts)
	if err := s.awaitStart(ctx); err != nil {
		_ = s.CloseStore()
		return nil, err
	}
	return s, nil
}

func restore(ctx context.Context, db store.Store, opts Options) (*engine.Engine, error) {
	requeued, err := db.RecoverInFlight(ctx)
	if err != nil {
		return nil, fmt.Errorf("recover in-flight jobs: %w", err)
	}
	var (
		budgets []store.Budget
		live    []string
		purges  []engine.Purge
		maxID   string
	)
	err = db.Load(ctx, store.Loader{
		Budget: func(b store.Budget) error { budgets = append(budgets, b); return nil },
		Job:    func(j store.LiveJob) error { live = append(live, j.ID); return nil },
		Purge: func(id string, at int64) error {
			purges = append(purges, engine.Purge{ID: id, At: at})
			return nil
		},
		MaxID: func(id string) { maxID = id },
	})
	if err != nil {
		return nil, fmt.Errorf("load store: %w", err)
	}
	jobs, err := wholeJobs(ctx, db, live)
	if err != nil {
		return nil, fmt.Errorf("load jobs: %w", err)
	}
	// IDs sort after every ID the store ever held, whatever the clock says.
	ids := jobid.New(opts.Clock.Now)
	ids.Observe(maxID)
	e := engine.New(opts.Engine, opts.Clock, journal{db}, ids)
	if err := e.Restore(budgets, jobs, purges); err != nil {
		return nil, err
	}
	opts.Logger.Info("engine restored", "jobs", len(jobs), "budgets", len(budgets), "requeued", requeued)
	return e, nil
}

// wholeJobs reads the live jobs whole, payloads included, a batch of IDs a
// query: the engine still keeps every live job whole. (It moves to the
// LiveJobs that Load gives, and reads payloads when it dispatches, next.)
func wholeJobs(ctx context.Context, db store.Store, ids []string) ([]store.Job, error) {
	const batch = 1000
	jobs := make([]store.Job, 0, len(ids))
	for len(ids) > 0 {
		n := min(batch, len(ids))
		got, err := db.GetJobs(ctx, ids[:n])
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, got...)
		ids = ids[n:]
	}
	return jobs, nil
}

// CloseStore closes the store; call it after Serve returns. It ends a start
// still in progress first.
func (s *Server) CloseStore() error {
	s.life.cancel()
	<-s.life.done
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

// DB exposes the store (for tests and maintenance commands).
func (s *Server) DB() *sqlite.DB { return s.db }
