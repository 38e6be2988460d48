package core

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// loadBatch is how many live jobs go from the store's reader to the engine
// at a time, and loadDepth how many batches may wait: enough to keep both
// sides busy, little enough to be no memory.
const (
	loadBatch = 1024
	loadDepth = 4
)

// load fills a new engine from the store in one pass, calling begin once
// the budgets are in and before the first job. The store's reader decodes
// rows on this goroutine while another indexes the jobs in the engine: at
// ten million jobs each side is several seconds of work, and a machine of
// two cores does them at once.
func load(ctx context.Context, st Store, r *engine.Restorer, begin func(store.LoadStart) error) error {
	p := newLoadPipe(r)
	err := st.Load(ctx, store.Loader{
		Budget: p.budget,
		Start:  begin,
		Job:    p.job,
		Unique: p.unique,
		Batch:  p.batched,
		Purge:  p.purge,
	})
	if perr := p.finish(); err == nil {
		err = perr
	}
	if err != nil {
		return fmt.Errorf("load the store: %w", err)
	}
	return nil
}

// loadPipe hands the live jobs to a goroutine of their own in batches. The
// engine's Restorer is used by one goroutine at a time: the indexer while
// jobs flow, this one before the first job and after the indexer has
// finished (budgets come before the jobs, unique keys, batches and the
// purge schedule after them).
type loadPipe struct {
	r      *engine.Restorer
	batch  []store.LiveJob
	full   chan []store.LiveJob // batches to index; closed by finish
	empty  chan []store.LiveJob // batches indexed, for reuse
	done   chan struct{}        // closed when the indexer has returned
	failed atomic.Bool          // the indexer met an error: stop reading
	err    error                // the indexer's error; read after done
	open   bool                 // the indexer runs
}

func newLoadPipe(r *engine.Restorer) *loadPipe {
	return &loadPipe{r: r, empty: make(chan []store.LiveJob, loadDepth+2)}
}

func (p *loadPipe) budget(b store.Budget) error {
	if err := p.finish(); err != nil {
		return err
	}
	p.r.Budget(b)
	return nil
}

func (p *loadPipe) job(lj store.LiveJob) error {
	if p.failed.Load() {
		return p.finish()
	}
	if !p.open {
		p.start()
	}
	p.batch = append(p.batch, lj)
	if len(p.batch) == loadBatch {
		p.full <- p.batch
		p.batch = p.reuse()
	}
	return nil
}

func (p *loadPipe) unique(u store.UniqueJob) error {
	if err := p.finish(); err != nil {
		return err
	}
	p.r.Unique(u)
	return nil
}

// batched restores the batch of a live batched job (a batch of issue 13,
// not one of the pipe's batches of jobs).
func (p *loadPipe) batched(b store.LiveBatch) error {
	if err := p.finish(); err != nil {
		return err
	}
	p.r.Batch(b)
	return nil
}

func (p *loadPipe) purge(id string, at int64) error {
	if err := p.finish(); err != nil {
		return err
	}
	p.r.Purge(id, at)
	return nil
}

// start runs the indexer.
func (p *loadPipe) start() {
	p.open = true
	p.full = make(chan []store.LiveJob, loadDepth)
	p.done = make(chan struct{})
	p.batch = p.reuse()
	go p.index()
}

// index adds each batch's jobs to the engine until the batches end; after
// an error it only drains them.
func (p *loadPipe) index() {
	defer close(p.done)
	for batch := range p.full {
		if p.err == nil {
			if err := p.r.Jobs(batch); err != nil {
				p.err = err
				p.failed.Store(true)
			}
		}
		clear(batch) // the jobs' strings hold the store's rows
		select {
		case p.empty <- batch[:0]:
		default:
		}
	}
}

func (p *loadPipe) reuse() []store.LiveJob {
	select {
	case b := <-p.empty:
		return b
	default:
		return make([]store.LiveJob, 0, loadBatch)
	}
}

// finish hands over the last batch, waits for the indexer to return and
// gives its error; the Restorer is this goroutine's again. Idempotent.
func (p *loadPipe) finish() error {
	if !p.open {
		return p.err
	}
	p.open = false
	if len(p.batch) > 0 {
		p.full <- p.batch
	}
	p.batch = nil
	close(p.full)
	<-p.done
	return p.err
}
