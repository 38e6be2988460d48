package reads

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

func TestPage(t *testing.T) {
	t.Parallel()
	scanOf := func(n int) func(func(store.Job) bool) error {
		return func(fn func(store.Job) bool) error {
			for i := range n {
				if !fn(store.Job{ID: fmt.Sprint(i)}) {
					return nil
				}
			}
			return nil
		}
	}
	for name, tc := range map[string]struct {
		matches, limit, want int
		more                 bool
	}{
		"Fewer":   {2, 3, 2, false},
		"Exactly": {3, 3, 3, false},
		"More":    {5, 3, 3, true},
	} {
		jobs, more, err := Page(tc.limit, scanOf(tc.matches))
		require.NoError(t, err, name)
		require.Len(t, jobs, tc.want, name)
		require.Equal(t, tc.more, more, name)
	}
	_, _, err := Page(1, func(func(store.Job) bool) error { return errors.New("boom") })
	require.EqualError(t, err, "boom")
}

func TestListJobs_Chunk(t *testing.T) {
	t.Parallel()
	chunkOf := func(f store.Filter, limit int) int {
		var got int
		_, _, err := ListJobs(f, limit, func(chunk int, _ func(store.Job) bool) error { got = chunk; return nil })
		require.NoError(t, err)
		return got
	}
	require.Equal(t, 11, chunkOf(store.Filter{}, 10), "one more than the page, to learn whether more follow")
	match := store.Filter{Match: func([]byte) bool { return true }}
	require.Equal(t, MatchChunk, chunkOf(match, 10), "a Match filter reads more rows per query")
	require.Equal(t, 1001, chunkOf(match, 1000))
	_, _, err := ListJobs(store.Filter{}, 0, nil)
	require.ErrorContains(t, err, "limit must be positive")
}
