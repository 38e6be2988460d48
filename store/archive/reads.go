package archive

import (
	"context"

	"github.com/zizq/zizq/store"
)

// Reads is the Source of a store that no one writes meanwhile (a backup's
// database, opened by Body.Open), read through the store's own reads.
func Reads(s store.Store) Source { return &storeReads{Store: s} }

type storeReads struct {
	store.Store
	loaded    bool
	holders   map[string]bool
	highWater string
}

func (r *storeReads) Jobs(ctx context.Context, fn func(store.Job) error) error {
	for from := ""; ; {
		jobs, more, err := r.ListJobs(ctx, store.Filter{}, from, store.Asc, chunk)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if err := fn(j); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		from = jobs[len(jobs)-1].ID
	}
}

func (r *storeReads) Errors(ctx context.Context, fn func(store.ErrorRecord) error) error {
	ids, err := r.JobIDs(ctx, store.Filter{})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := r.jobErrors(ctx, id, fn); err != nil {
			return err
		}
	}
	return nil
}

// jobErrors calls fn with every error record of one job, by attempt.
func (r *storeReads) jobErrors(ctx context.Context, id string, fn func(store.ErrorRecord) error) error {
	for from := uint32(0); ; {
		recs, more, err := r.ListErrors(ctx, id, from, store.Asc, chunk)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if err := fn(rec); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		from = recs[len(recs)-1].Attempt
	}
}

func (r *storeReads) Holders(ctx context.Context) (map[string]bool, error) {
	err := r.load(ctx)
	return r.holders, err
}

func (r *storeReads) HighWater(ctx context.Context) (string, error) {
	err := r.load(ctx)
	return r.highWater, err
}

// load reads the unique keys' holders and the high-water mark, which only
// the store's Load tells, once for both.
func (r *storeReads) load(ctx context.Context) error {
	if r.loaded {
		return nil
	}
	holders := map[string]bool{}
	err := r.Load(ctx, store.Loader{
		Unique: func(u store.UniqueJob) error {
			if u.Holds {
				holders[u.ID] = true
			}
			return nil
		},
		Start: func(s store.LoadStart) error { r.highWater = s.MaxID; return nil },
	})
	if err != nil {
		return err
	}
	r.holders, r.loaded = holders, true
	return nil
}
