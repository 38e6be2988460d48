package sqlite

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/zizq/zizq/store"
)

// Fault is a storage failure the writer can be made to suffer, so that the
// behaviour of everything above the store on a full or read-only disk can
// be tested without one (a test running as root ignores file modes, and
// filling a real disk is neither portable nor fast).
type Fault uint32

const (
	// NoFault: writes work.
	NoFault Fault = iota
	// FaultDiskFull: every write transaction fails as on a full disk
	// ("storage unavailable: database or disk is full") after its
	// statements ran, and is rolled back.
	FaultDiskFull
	// FaultReadOnly: the writer's connection turns query-only, so SQLite
	// itself refuses every write ("storage unavailable: attempt to write a
	// readonly database"), as when the file system is remounted read-only.
	FaultReadOnly
)

// errDiskFull is what a transaction under FaultDiskFull fails with: the
// same text as SQLITE_FULL gives.
var errDiskFull = fmt.Errorf("%w: database or disk is full", store.ErrUnavailable)

// faults is the simulated fault: wanted is set by SimulateFault, applied is
// what the writer's connection is set to (writer goroutine only).
type faults struct {
	wanted  atomic.Uint32
	applied Fault
}

// SimulateFault makes the writer suffer f from its next transaction on;
// NoFault ends it. Reads are unaffected, as they are by the real failures.
// It is meant for tests and drills.
func (db *DB) SimulateFault(f Fault) {
	db.faults.wanted.Store(uint32(f))
	db.q.Wake()
}

// applyFault brings the writer's connection in line with the simulated
// fault before a transaction, and reports whether that transaction must
// fail as on a full disk. It runs on the writer goroutine.
func (db *DB) applyFault() (full bool, err error) {
	f := Fault(db.faults.wanted.Load())
	if (f == FaultReadOnly) != (db.faults.applied == FaultReadOnly) {
		q := "PRAGMA query_only = 0"
		if f == FaultReadOnly {
			q = "PRAGMA query_only = 1"
		}
		if _, err := db.w.conn.ExecContext(context.Background(), q); err != nil {
			return false, wrapWrite("simulate fault", err)
		}
	}
	db.faults.applied = f
	return f == FaultDiskFull, nil
}
