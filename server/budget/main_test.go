package budget

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// Set once, before any test runs: a Debit the pool cannot pay, or a
	// Release of more than is held, is a bug in the test and must panic.
	debugChecks = true
	os.Exit(m.Run())
}
