package core

import (
	"context"
	"io"

	"github.com/zizq/zizq/store"
)

// Store is the store the core writes to and reads from.
type Store = store.Store

// Backup writes a consistent snapshot of the store as a tar.gz archive;
// started is called once, just before the first byte is written.
func (s *Service) Backup(ctx context.Context, w io.Writer, started func()) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.store.Backup(ctx, &firstWrite{w: w, first: started})
}

// firstWrite calls first before the first write reaches w, so the caller
// can still answer an error before any byte is out.
type firstWrite struct {
	w     io.Writer
	first func()
}

func (f *firstWrite) Write(p []byte) (int, error) {
	if f.first != nil {
		f.first()
		f.first = nil
	}
	return f.w.Write(p)
}

// Compact returns the space of deleted jobs to the file system and empties
// the store's log (store.Store.Compact).
func (s *Service) Compact(ctx context.Context) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	return s.store.Compact(ctx)
}
