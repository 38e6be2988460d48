package sqlite

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

func TestDB_SimulateFault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		fault  Fault
		reason string
	}{
		{"DiskFull", FaultDiskFull, "storage unavailable: database or disk is full"},
		{"ReadOnly", FaultReadOnly, "storage unavailable: attempt to write a readonly database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.apply(t, store.InsertJob(job(1)))

			b.db.SimulateFault(c.fault)
			for _, ops := range [][]store.Op{
				{store.InsertJob(job(2))},
				{store.DeleteJob(id(1))},
				{store.SetStatus(id(1), store.InFlight, 5)},
				{store.PutBudget(store.Budget{Key: "b", Allocation: 1})},
			} {
				err := b.db.Append(ops...).Wait(b.ctx)
				require.ErrorIs(t, err, store.ErrUnavailable)
				require.EqualError(t, err, c.reason)
			}
			// Reads keep working and see nothing of the failed writes.
			require.Equal(t, []string{id(1)}, b.ids(t))
			got, err := b.db.GetJob(b.ctx, id(1), 0)
			require.NoError(t, err)
			require.Equal(t, store.Ready, got.Status)
			budgets, err := b.db.Budgets(b.ctx)
			require.NoError(t, err)
			require.Empty(t, budgets)

			// Writes work again once the fault is gone.
			b.db.SimulateFault(NoFault)
			b.apply(t, store.InsertJob(job(2)))
			require.Equal(t, []string{id(1), id(2)}, b.ids(t))
			require.NoError(t, b.db.IntegrityCheck(b.ctx))
		})
	}
}
