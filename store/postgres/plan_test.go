package postgres

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// TestPlan_FoldsBatchOps: a fold's SetPayload and CloseBatch right after
// the job's insert (or a SetPayload after a SetPayload) are folded into
// that op, on a copy; anything else between keeps them apart.
func TestPlan_FoldsBatchOps(t *testing.T) {
	t.Parallel()
	batched := store.Job{ID: "a", Queue: "q", Type: "t", Payload: []byte(`[1]`),
		Batch: &store.BatchConfig{Key: "k", When: "true", Fold: "$new"}, BatchOpen: true}
	folded := batched
	folded.Payload, folded.BatchOpen = []byte(`[1,2,3]`), false
	for name, tc := range map[string]struct {
		ops  []store.Op
		want [][]store.Op // the non-empty slots of each phase, in slot order
	}{
		"IntoTheInsert": {
			ops: []store.Op{store.InsertJob(batched), store.SetPayload("a", []byte(`[1,2]`)),
				store.SetPayload("a", []byte(`[1,2,3]`)), store.CloseBatch("a")},
			want: [][]store.Op{{store.InsertJob(folded)}},
		},
		"PayloadsIntoOne": {
			ops:  []store.Op{store.SetPayload("a", []byte(`[1]`)), store.SetPayload("a", []byte(`[2]`)), store.CloseBatch("a")},
			want: [][]store.Op{{store.SetPayload("a", []byte(`[2]`)), store.CloseBatch("a")}},
		},
		"NotAcrossAnotherOp": {
			ops: []store.Op{store.InsertJob(batched), store.SetStatus("a", store.InFlight, 1),
				store.SetPayload("a", []byte(`[2]`))},
			want: [][]store.Op{{store.InsertJob(batched), store.SetStatus("a", store.InFlight, 1), store.SetPayload("a", []byte(`[2]`))}},
		},
		"NotAcrossDeleteEverything": {
			ops:  []store.Op{store.InsertJob(batched), store.DeleteEverything(), store.SetPayload("a", []byte(`[2]`))},
			want: [][]store.Op{{store.InsertJob(batched)}, {}, {store.SetPayload("a", []byte(`[2]`))}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := &group{Ops: append([]store.Op(nil), tc.ops...)}
			var got [][]store.Op
			for _, ph := range plan([]*group{g}) {
				flat := []store.Op{}
				for _, ops := range ph.slots {
					flat = append(flat, ops...)
				}
				got = append(got, flat)
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.ops, g.Ops, "the group's own ops are unchanged")
		})
	}
}
