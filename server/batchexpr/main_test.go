package batchexpr_test

import (
	"os"
	"testing"

	"github.com/zizq/zizq/server/batchexpr"
)

// TestMain lets the test binary serve as the sandbox's worker.
func TestMain(m *testing.M) {
	batchexpr.ServeIfWorker()
	os.Exit(m.Run())
}
