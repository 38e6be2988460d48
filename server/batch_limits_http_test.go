//go:build linux && !race

package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/batchexpr"
)

// Built only where the batch workers' address space is limited (Linux, not
// a race build): without the limit a 2 GB string would take the machine's
// memory. The race run of .ci/run leaves it to the plain run.

// A hostile program costs a 422 and its worker process; the server keeps
// serving, and the pending job keeps its payload.
func TestBatch_HostileFolds(t *testing.T) {
	t.Parallel()
	require.True(t, batchexpr.MemoryLimited(), "this build limits the batch workers' address space")
	// The deadline is a minute but for the program that is to run into
	// it: the others must meet their own limits however slow the machine.
	tb := setup(t, func(o *server.Options) { o.BatchSandbox.Limits.Timeout = time.Minute })
	onTime := setup(t)
	for name, tc := range map[string]struct {
		// orErr, when set, may come instead of err (see the sandbox's
		// DeepCompare: which limit a deep recursion meets first depends on
		// the load).
		when, fold, err, orErr string
		tb                     *testBundle
	}{
		"StringRepeat2GB": {when: "true", fold: `"x" * 2147483000`, err: "batch dry-run: evaluation ran out of memory and was stopped", tb: tb},
		"InfiniteLoop":    {when: "def f: f; f", fold: "$new", err: "batch dry-run: when: expression took longer than 1s", tb: onTime},
		"DeepNesting": {when: "true", fold: `reduce range(400000) as $i (null; [.]) | . == .`, err: "batch dry-run: evaluation nested too deep (stack overflow) and was stopped",
			orErr: "batch dry-run: evaluation ran out of memory and was stopped", tb: tb},
		"PastBodySize": {when: "true", fold: `"x" * 17000000`, err: "batch dry-run: fold: fold output exceeds the 16777216-byte payload limit (--max-body-size)", tb: tb},
	} {
		t.Run(name, func(t *testing.T) {
			r := tc.tb.req(t, "POST", "/jobs", batched(`[1]`, "hostile-"+name, tc.when, tc.fold))
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "body: %s", r.body)
			if got := r.errorText(t); tc.orErr == "" || got != tc.orErr {
				require.Equal(t, tc.err, got)
			}
		})
	}
	// Harmless on its own payload, explosive once the batch has grown.
	bomb := `if ($existing | length) > 1 then "x" * 2147483000 else $existing + $new end`
	_, a := tb.enqueueAs(t, api.JSON, batched(`[1]`, "bomb", "true", bomb))
	_, b := tb.enqueueAs(t, api.JSON, batched(`[2]`, "bomb", "true", bomb))
	require.Equal(t, a.ID, b.ID)
	r := tb.req(t, "POST", "/jobs", batched(`[3]`, "bomb", "true", "$new"))
	require.Equal(t, http.StatusUnprocessableEntity, r.status)
	require.Equal(t, "batch fold failed: evaluation ran out of memory and was stopped", r.errorText(t))
	require.Equal(t, `[1,2]`, payloadOf(t, tb, a.ID))

	require.Equal(t, http.StatusOK, tb.req(t, "GET", "/health", nil).status)
	status, _ := tb.enqueueAs(t, api.JSON, concat(`[1]`, 3))
	require.Equal(t, http.StatusCreated, status, "the server still folds")
	status, _ = tb.enqueueAs(t, api.JSON, concat(`[2]`, 3))
	require.Equal(t, http.StatusOK, status)
}
