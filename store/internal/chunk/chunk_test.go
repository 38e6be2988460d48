package chunk

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestByID(t *testing.T) {
	t.Parallel()
	var calls [][]string
	got, err := ByID([]string{"c", "a", "b", "a", "d", "c"}, 2, func(out []string, ids []string) ([]string, error) {
		calls = append(calls, ids)
		return append(out, ids...), nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c", "d"}, got)
	require.Equal(t, [][]string{{"a", "b"}, {"c", "d"}}, calls, "distinct, in order, size at a time")

	got, err = ByID[string](nil, 2, nil)
	require.NoError(t, err)
	require.Nil(t, got)

	_, err = ByID([]string{"a"}, 2, func([]string, []string) ([]string, error) { return nil, errors.New("boom") })
	require.EqualError(t, err, "boom")
}
