package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// kill takes the job and fails it for good, returning the dead job.
func (tb *testBundle) kill(t *testing.T, id string) store.Job {
	t.Helper()
	tk := tb.e.NewTaker(nil, 0)
	defer tk.Close()
	require.Contains(t, drainIDs(tk), id)
	dead, _, err := tb.e.Fail(id, Failure{Message: "boom", Kill: true})
	require.NoError(t, err)
	require.Equal(t, store.Dead, dead.Status)
	return dead
}

func TestEngine_Readmit(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 1, store.WhileInFlight, 0, 0)
	id := tb.enqueue(t, spec{binds: bindings("b", 1)})
	dead := tb.kill(t, id)
	require.NotZero(t, dead.PurgeAt)

	tb.clk.Advance(time.Minute)
	got, _, err := tb.e.Readmit(dead)
	require.NoError(t, err)
	require.Equal(t, store.Ready, got.Status)
	require.Equal(t, uint32(1), got.Attempts, "attempts are kept")
	require.Equal(t, tb.clk.Now().UnixMilli(), got.ReadyAt)
	require.Zero(t, got.PurgeAt)

	// Live again: dispatched, and its old purge never fires.
	tk := tb.e.NewTaker(nil, 0)
	require.Equal(t, []string{id}, drainIDs(tk))
	tb.clk.Advance(30 * 24 * time.Hour)
	_, live := tb.e.Job(id)
	require.True(t, live)

	// Not dead: refused.
	_, _, err = tb.e.Readmit(dead)
	require.ErrorContains(t, err, "is not dead: it is in_flight")
	tb.ack(t, id)
	_, _, err = tb.e.Readmit(store.Job{ID: "x", Status: store.Completed})
	require.ErrorContains(t, err, "is not dead: it is completed")
}

func TestEngine_ReadmitRefusals(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.budget(t, "b", 1, store.WhileInFlight, 0, 0)
	id := tb.enqueue(t, spec{binds: bindings("b", 1)})
	dead := tb.kill(t, id)

	// Its budget is gone.
	_, err := tb.e.DeleteBudget("b")
	require.NoError(t, err)
	_, _, err = tb.e.Readmit(dead)
	require.Equal(t, Unprocessable, err.(*Error).Kind)
	require.ErrorContains(t, err, "budget 'b' does not exist")

	// Its purge was journalled: it is gone.
	other := tb.kill(t, tb.enqueue(t, spec{}))
	tb.clk.Advance(8 * 24 * time.Hour)
	_, _, err = tb.e.Readmit(other)
	require.Equal(t, NotFound, err.(*Error).Kind)
}
