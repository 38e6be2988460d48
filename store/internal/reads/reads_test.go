package reads

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

// TestScan_MatchesModel: Scan and ScanWithin over a table read chunk by
// chunk (as a store's queries do) yield what a plain loop over the whole
// table yields: every job after the cursor, in order, that the conditions
// and Match accept, up to where fn stops.
func TestScan_MatchesModel(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		n := rng.IntN(40)
		var table []store.Job // ascending by ID
		for i := range n {
			table = append(table, store.Job{ID: fmt.Sprintf("j%03d", i*2), Payload: []byte{byte(rng.IntN(3))}})
		}
		sqlSelects := func(j store.Job) bool { return j.Payload[0] != 2 } // the query's own conditions
		f := store.Filter{}
		if rng.IntN(2) == 0 {
			f.Match = func(p []byte) bool { return p[0] != 1 }
		}
		var within []string
		if rng.IntN(2) == 0 {
			for i := range n + 5 {
				if rng.IntN(2) == 0 {
					within = append(within, fmt.Sprintf("j%03d", i*2+rng.IntN(2))) // some name no job
				}
			}
			f.Within = store.NewIDSet(within)
		}
		order := store.Asc
		if f.Within != nil && rng.IntN(2) == 0 {
			order = store.Desc
		}
		from := ""
		if rng.IntN(2) == 0 {
			from = fmt.Sprintf("j%03d", rng.IntN(2*n+2))
		}
		chunk, stopAfter := 1+rng.IntN(7), rng.IntN(n+2)

		// The model: the whole table, filtered and ordered by a plain loop.
		want := []string{}
		inWithin := map[string]bool{}
		for _, id := range within {
			inWithin[id] = true
		}
		ordered := slices.Clone(table)
		if order == store.Desc {
			slices.Reverse(ordered)
		}
		for _, j := range ordered {
			after := from == "" || (order == store.Asc && j.ID > from) || (order == store.Desc && j.ID < from)
			if after && sqlSelects(j) && (f.Within == nil || inWithin[j.ID]) && (f.Match == nil || f.Match(j.Payload)) {
				want = append(want, j.ID)
			}
		}
		if len(want) > stopAfter {
			want = want[:stopAfter]
		}

		got := []string{}
		fn := func(j store.Job) bool {
			if len(got) == stopAfter {
				return false
			}
			got = append(got, j.ID)
			return true
		}
		var err error
		if f.Within == nil {
			err = Scan(f, from, chunk, func(buf []store.Job, cursor string) ([]store.Job, error) {
				for _, j := range table {
					if len(buf) < chunk && (cursor == "" || j.ID > cursor) && sqlSelects(j) {
						buf = append(buf, j)
					}
				}
				return buf, nil
			}, fn)
		} else {
			err = ScanWithin(f, from, order, chunk, func(buf []store.Job, batch []string) ([]store.Job, error) {
				require.LessOrEqual(t, len(batch), chunk)
				for _, id := range slices.Backward(batch) { // rows come back in any order
					if i, ok := slices.BinarySearchFunc(table, id, func(j store.Job, id string) int { return strings.Compare(j.ID, id) }); ok && sqlSelects(table[i]) {
						buf = append(buf, table[i])
					}
				}
				return buf, nil
			}, fn)
		}
		require.NoError(t, err)
		require.Equal(t, want, got, "round %d: chunk %d from %q order %v within %v", round, chunk, from, order, within)
	}
	err := Scan(store.Filter{}, "", 3, func([]store.Job, string) ([]store.Job, error) { return nil, errors.New("boom") }, func(store.Job) bool { return true })
	require.EqualError(t, err, "boom")
}
