package store

import "context"

// Pending is one appended group of ops.
type Pending interface {
	// Wait returns once the transaction holding the group has committed,
	// with nil, or has failed, with its error. If ctx ends first it returns
	// ctx's error; the group still commits (or fails) later.
	Wait(ctx context.Context) error
}
