package sqlite

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/storetest"
)

func TestDB_Conformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t testing.TB) store.Store {
		db, err := Open(context.Background(), t.TempDir(), quiet())
		require.NoError(t, err)
		return db
	})
}
