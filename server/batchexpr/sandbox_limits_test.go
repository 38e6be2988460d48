//go:build linux && !race

package batchexpr_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/batchexpr"
)

// These tests need the workers' address-space limit: Linux has it, and a
// race build cannot have it (its shadow memory grows with the heap). They
// are built only where it exists, so that none of them skips.

func TestMemoryLimited(t *testing.T) {
	require.True(t, batchexpr.MemoryLimited(), "this build limits its workers' address space")
}

// The programs that would take the machine's memory without the limit.
func TestSandbox_HostileProgramsOutOfMemory(t *testing.T) {
	t.Parallel()
	runHostile(t, map[string]hostileCase{
		"StringRepeat2GB":     {fold: `"x" * 2147483000`, err: "batch fold failed: evaluation ran out of memory and was stopped", killed: true},
		"SparseArrayReversed": {fold: `null | .[536870000] = 1 | reverse`, err: "batch fold failed: evaluation ran out of memory and was stopped", killed: true},
		"Doubling":            {fold: `reduce range(40) as $i ("x"; . + .)`, err: "batch fold failed: evaluation ran out of memory and was stopped", killed: true},
		// Its stack grows by copies, each needing the old and the new one
		// mapped: with the collector behind (a loaded machine) the address
		// space may run out before the stack's bound does. Either way the
		// worker is stopped.
		"DeepCompare": {fold: `reduce range(400000) as $i (null; [.]) | . == .`, err: "batch fold failed: evaluation nested too deep (stack overflow) and was stopped",
			orErr: "batch fold failed: evaluation ran out of memory and was stopped", killed: true},
	})
}

// The server's own memory stays as it was while workers die of hostile
// programs.
func TestSandbox_ServerMemoryUntouched(t *testing.T) {
	s, _ := newSandbox(t, func(o *batchexpr.SandboxOptions) { o.Workers = 1 })
	before := rssBytes(t)
	hostile := batchexpr.Config{When: "true", Fold: `"x" * 2147483000`}
	for range 3 {
		_, err := s.Run(ctx, batchexpr.Task{Into: &hostile, Existing: []byte("1"), New: []byte("2")})
		require.Error(t, err)
	}
	require.Less(t, rssBytes(t)-before, int64(100<<20), "the 2 GB strings were the workers'")
}

func rssBytes(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
