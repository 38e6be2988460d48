package store

import "time"

// LeaseState is a cluster's lease as a node last read it: which node
// holds it, where that node is reached, and its term. Taking the lease
// raises the term; the holder's writes carry it, so a deposed leader's
// fail.
type LeaseState struct {
	Holder string
	URL    string
	// AdminURL is where the holder's admin port is reached ("": none).
	AdminURL string
	Term     int64
	// Held reports whether the node that read the state took or renewed
	// the lease: it runs until at least the time the request was sent
	// plus its duration.
	Held bool
	// Left is how long the lease of another holder runs on, by the
	// database's clock: a candidate tries again once it has passed.
	Left time.Duration
}
