package engine

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/jobid"
	"github.com/zizq/zizq/store"
)

// windowsBundle is an engine with jobs spread over queues, priorities and
// budget groups, some scheduled and some in flight, and a watch in force.
type windowsBundle struct {
	*testBundle
	taker *Taker
}

func newWindowsBundle(t *testing.T, seed uint64, n int) *windowsBundle {
	t.Helper()
	tb := setup(t)
	for _, k := range []string{"a", "b"} {
		tb.budget(t, k, 1000, store.WhileInFlight, 0, 0)
	}
	_, stop := tb.e.Watch()
	t.Cleanup(stop)
	rng := rand.New(rand.NewPCG(seed, 1))
	now := tb.clk.Now().UnixMilli()
	var specs []NewJob
	for i := range n {
		s := NewJob{Type: fmt.Sprintf("t%d", rng.IntN(3)), Queue: fmt.Sprintf("q%d", rng.IntN(4)), Priority: uint16(rng.IntN(3))}
		switch rng.IntN(3) {
		case 0:
			s.Budgets = []BindingSpec{{Key: "a", Cost: 1}}
		case 1:
			s.Budgets = []BindingSpec{{Key: "a", Cost: 1}, {Key: "b", Cost: 2}}
		}
		if i%4 == 0 {
			at := now + int64(rng.IntN(100_000)) + 1
			s.ReadyAt = &at
		}
		specs = append(specs, s)
	}
	jobs, _, err := tb.e.Enqueue(specs)
	require.NoError(t, err)
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	tb.e.Admit(ids)
	w := &windowsBundle{testBundle: tb}
	w.taker = tb.e.NewTaker([]string{"q0"}, n/10)
	tb.clk.Advance(time.Millisecond)
	tb.e.catchUpLocked()
	return w
}

// catchUpLocked runs catchUp under the lock (tests move the fake clock).
func (e *Engine) catchUpLocked() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.catchUp()
}

// model returns every live job of the list in its order, by brute force.
func (w *windowsBundle) model(l List) []store.Job {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []store.Job
	for _, j := range e.ids.all() {
		v := e.view(j.id.String(), j.idx)
		want := map[List]store.Status{ListReady: store.Ready, ListInFlight: store.InFlight, ListScheduled: store.Scheduled}[l]
		if v.Status == want {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b store.Job) int {
		switch l {
		case ListReady:
			if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
				return c
			}
		case ListInFlight:
			if c := cmp.Compare(a.DequeuedAt, b.DequeuedAt); c != 0 {
				return c
			}
		default:
			if c := cmp.Compare(a.ReadyAt, b.ReadyAt); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

func ids(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func TestEngine_Windows(t *testing.T) {
	t.Parallel()
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			w := newWindowsBundle(t, seed, 600)
			for _, l := range []List{ListReady, ListInFlight, ListScheduled} {
				all := w.model(l)
				require.NotEmpty(t, all, "list %d", l)
				get := func(a Anchor, limit int) Window {
					var reqs [NumLists]WindowRequest
					reqs[l] = WindowRequest{Anchor: a, Limit: limit}
					return w.e.Windows(reqs)[l]
				}
				slice := func(from, limit int) []string {
					from = max(0, min(from, len(all)-limit))
					return ids(all[from:min(len(all), from+limit)])
				}
				for _, limit := range []int{1, 7, 50, 1000} {
					head := get(Anchor{Kind: AnchorHead}, limit)
					require.Equal(t, slice(0, limit), ids(head.Jobs), "head, list %d limit %d", l, limit)
					require.Equal(t, len(all), head.Total)
					tail := get(Anchor{Kind: AnchorTail}, limit)
					require.Equal(t, slice(len(all)-limit, limit), ids(tail.Jobs))
					require.Equal(t, max(0, len(all)-limit), tail.First)
					for _, off := range []int{0, 1, 13, len(all) / 2, len(all) - 1, len(all) + 5} {
						got := get(Anchor{Kind: AnchorOffset, Offset: off}, limit)
						require.Equal(t, slice(off, limit), ids(got.Jobs), "offset %d, list %d limit %d", off, l, limit)
						require.Equal(t, max(0, min(off, len(all)-limit)), got.First)
					}
					for _, pos := range []int{0, 3, len(all) / 3, len(all) - 1} {
						got := get(Anchor{Kind: AnchorAround, ID: all[pos].ID}, limit)
						require.Equal(t, all[pos].ID, got.Resolved)
						require.Equal(t, slice(pos-limit/2, limit), ids(got.Jobs), "around %d", pos)
					}
				}
				gone := get(Anchor{Kind: AnchorAround, ID: "0000000000000000000000000", Fallback: AnchorNowhere}, 5)
				require.Empty(t, gone.Jobs)
				require.Equal(t, len(all), gone.Total)
				require.Equal(t, slice(len(all)-5, 5), ids(get(Anchor{Kind: AnchorAround, ID: "0000000000000000000000000", Fallback: AnchorTail}, 5).Jobs))
			}
		})
	}
}

func TestEngine_Find(t *testing.T) {
	t.Parallel()
	w := newWindowsBundle(t, 7, 9000) // more than one chunk of ready jobs
	all := w.model(ListReady)
	matches := func(j store.Job) bool { return j.Queue == "q3" && j.Type == "t2" }
	var want []int
	for i, j := range all {
		if matches(j) {
			want = append(want, i)
		}
	}
	require.NotEmpty(t, want)
	find := func(id string, d Direction) (Found, bool) {
		return w.e.Find(FindRequest{List: ListReady, ID: id, Direction: d, Queues: []string{"3"}, Types: []string{"2"}, Limit: 10})
	}
	f, ok := find("", Forward)
	require.True(t, ok)
	require.Equal(t, want[0], f.Position)
	require.Equal(t, all[want[0]].ID, f.Window.Resolved)
	f, ok = find(all[want[0]].ID, Forward)
	require.True(t, ok)
	require.Equal(t, want[1], f.Position, "the next match after the anchor")
	f, ok = find("", Backward)
	require.True(t, ok)
	require.Equal(t, want[len(want)-1], f.Position)
	f, ok = find(all[want[1]].ID, Backward)
	require.True(t, ok)
	require.Equal(t, want[0], f.Position)
	_, ok = find(all[want[0]].ID, Backward)
	require.False(t, ok, "nothing before the first match")
	f, ok = find(all[5000].ID, Locate)
	require.True(t, ok)
	require.Equal(t, 5000, f.Position)
	require.Equal(t, ids(all[4995:5005]), ids(f.Window.Jobs))
	_, ok = w.e.Find(FindRequest{List: ListReady, Direction: Forward, Queues: []string{"nope"}, Limit: 10})
	require.False(t, ok)
}

// TestEngine_Changes: every operation moves the generation of the lists
// it changes, finished jobs come through the ring, and the wake channel is
// poked without ever blocking.
func TestEngine_Changes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	wake, stop := tb.e.Watch()
	defer stop()
	var c Cursor
	ch := tb.e.Changes(&c, nil)
	require.False(t, ch.Any())

	jobs, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q"}, {Type: "t", Queue: "q"}})
	require.NoError(t, err)
	tb.e.Admit([]string{jobs[0].ID, jobs[1].ID})
	<-wake
	ch = tb.e.Changes(&c, nil)
	require.Equal(t, [NumLists]bool{ListReady: true}, ch.Lists)

	tk := tb.e.NewTaker(nil, 0)
	ch = tb.e.Changes(&c, nil)
	require.Equal(t, [NumLists]bool{ListReady: true, ListInFlight: true}, ch.Lists)
	_ = tk
	missing, _ := tb.e.Ack([]string{jobs[0].ID})
	require.Empty(t, missing)
	_, _, err = tb.e.Fail(jobs[1].ID, Failure{Message: "x"})
	require.NoError(t, err)
	ch = tb.e.Changes(&c, nil)
	require.Equal(t, []Finished{{ID: mustID(t, jobs[0].ID)}, {ID: mustID(t, jobs[1].ID), Dead: true}}, ch.Finished)
	require.True(t, ch.Lists[ListScheduled], "a retry waits for its backoff")
}

func mustID(t *testing.T, s string) jobid.ID {
	t.Helper()
	id, ok := jobid.Parse(s)
	require.True(t, ok)
	return id
}
