package server_test

import (
	"os"
	"testing"

	"github.com/zizq/zizq/server/batchexpr"
)

// TestMain lets the test binary serve as the batch sandbox's worker: the
// servers of these tests start it again to run batch programs.
func TestMain(m *testing.M) {
	batchexpr.ServeIfWorker()
	os.Exit(m.Run())
}
