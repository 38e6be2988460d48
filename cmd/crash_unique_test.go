package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

const crashKeys = 100

// stormCounts counts the storm's answers: new jobs and duplicates.
type stormCounts struct{ created, duplicates atomic.Int64 }

func (c *stormCounts) add(j api.Job) {
	if *j.Duplicate {
		c.duplicates.Add(1)
	} else {
		c.created.Add(1)
	}
}

// uniqueStorm enqueues jobs with keys of a small set, one at a time and in
// bulk (with duplicates inside a request), in every scope, until ctx ends.
func uniqueStorm(ctx context.Context, url string, seed uint64, n *stormCounts) {
	rng := rand.New(rand.NewPCG(seed, 7))
	scopes := []string{"queued", "queued", "queued", "active", "active", "exists"}
	keep := []int{0, 0, 30, 3_600_000} // ms: most finished jobs go, some stay a while, a few an hour
	item := func() map[string]any {
		return map[string]any{"type": "t", "queue": "u", "payload": map[string]any{"n": rng.IntN(1000)},
			"unique_key": fmt.Sprintf("key-%d", rng.IntN(crashKeys)), "unique_while": scopes[rng.IntN(len(scopes))],
			"retention": map[string]any{"completed_ms": keep[rng.IntN(len(keep))], "dead_ms": keep[rng.IntN(len(keep))]}}
	}
	for ctx.Err() == nil {
		if rng.IntN(4) == 0 {
			jobs := []any{item(), item(), item()}
			status, data, err := tryDo("POST", url+"/jobs/bulk", map[string]any{"jobs": jobs})
			var out api.BulkJobs
			if err == nil && (status == http.StatusCreated || status == http.StatusOK) && json.Unmarshal(data, &out) == nil {
				for _, j := range out.Jobs {
					n.add(j)
				}
			}
			continue
		}
		status, data, err := tryDo("POST", url+"/jobs", item())
		var j api.Job
		if err == nil && (status == http.StatusCreated || status == http.StatusOK) && json.Unmarshal(data, &j) == nil {
			n.add(j)
		}
	}
}

// uniqueWorker takes jobs and acks, retries or kills them at random, and
// leaves some in flight until it reconnects (a disconnect requeue), so keys
// are released, taken back and moved on while the storm runs.
func uniqueWorker(ctx context.Context, url string, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 11))
	for ctx.Err() == nil {
		uniqueSession(ctx, url, rng, 50+rng.IntN(100))
	}
}

// uniqueSession is one take stream of a worker, for n jobs.
func uniqueSession(ctx context.Context, url string, rng *rand.Rand, n int) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/jobs/take?prefetch=16&queue=u", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	frames := api.NewFrameReader(resp.Body, api.NDJSON)
	for range n {
		j, err := frames.Job()
		if err != nil {
			return
		}
		switch n := rng.IntN(16); {
		case n < 8:
			_, _, _ = tryDo("POST", url+"/jobs/"+j.ID+"/success", nil)
		case n < 13:
			_, _, _ = tryDo("POST", url+"/jobs/"+j.ID+"/failure", map[string]any{"message": "x", "retry_at": time.Now().UnixMilli() + int64(rng.IntN(50))})
		case n < 15:
			_, _, _ = tryDo("POST", url+"/jobs/"+j.ID+"/failure", map[string]any{"message": "x", "kill": true})
		} // else: left in flight until the stream ends
	}
}

// storedKeys reads the unique keys from the store, and the purge times of
// the finished jobs.
func storedKeys(t *testing.T, dir string) ([]store.UniqueJob, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, dir, sqlite.Options{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.IntegrityCheck(ctx))
	var keys []store.UniqueJob
	purges := map[string]int64{}
	require.NoError(t, db.Load(ctx, store.Loader{
		Unique: func(u store.UniqueJob) error { keys = append(keys, u); return nil },
		Purge:  func(id string, at int64) error { purges[id] = at; return nil },
	}))
	return keys, purges
}

// holdersOf returns each key's holder, failing if a key has two.
func holdersOf(t *testing.T, keys []store.UniqueJob) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range keys {
		if u.Holds {
			require.NotContains(t, out, u.Key, "key %s has two holders", u.Key)
			out[u.Key] = u.ID
		}
	}
	return out
}

// TestCrash_UniqueKeys kills a real server with SIGKILL during a storm of
// unique enqueues, takes, acks, retries and deaths, then checks the store
// (one holder per key at most) and that the restarted server's index is the
// store's: an enqueue of every key in the exists scope is a duplicate of
// the stored holder, or, for a free key, of the first queued job left in
// flight with it (recovery takes the key back), or else new. After a second
// kill every key has exactly one holder, the one the server answered.
func TestCrash_UniqueKeys(t *testing.T) {
	for _, mode := range []string{"buffered", "fsync"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "data")
			p := startServer(t, "--root-dir", root, "--default-commit-mode", mode)
			ctx, cancel := context.WithCancel(context.Background())
			var n stormCounts
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Add(1)
				go func() { defer wg.Done(); uniqueStorm(ctx, p.url, uint64(i), &n) }()
			}
			for i := range 2 {
				wg.Add(1)
				go func() { defer wg.Done(); uniqueWorker(ctx, p.url, uint64(i)) }()
			}
			time.Sleep(1500 * time.Millisecond)
			p.kill()
			cancel()
			wg.Wait()

			require.Positive(t, n.created.Load())
			require.Positive(t, n.duplicates.Load(), "the storm makes duplicates")

			keys, purges := storedKeys(t, dir)
			want := holdersOf(t, keys)
			require.NotEmpty(t, want)
			// Finished holders kept for a moment are purged by the time of
			// the check (wait for the last of them): their keys are free.
			soon := time.Now().Add(time.Minute).UnixMilli()
			for key, id := range want {
				if at, ok := purges[id]; ok && at < soon {
					time.Sleep(time.Until(time.UnixMilli(at + 1)))
					delete(want, key)
				}
			}
			slices.SortFunc(keys, func(a, b store.UniqueJob) int { return strings.Compare(a.ID, b.ID) })
			for _, u := range keys {
				if _, held := want[u.Key]; !held && u.Status == store.InFlight && u.While == store.UniqueQueued {
					want[u.Key] = u.ID
				}
			}

			p = startServer(t, "--root-dir", root, "--default-commit-mode", mode)
			answered := map[string]string{}
			for k := range crashKeys {
				key := fmt.Sprintf("key-%d", k)
				status, data := do(t, "POST", p.url+"/jobs", map[string]any{"type": "t", "queue": "check", "payload": nil,
					"unique_key": key, "unique_while": "exists"})
				var j api.Job
				require.NoError(t, json.Unmarshal(data, &j), "%s", data)
				if h, ok := want[key]; ok {
					require.Equal(t, http.StatusOK, status, "%s: the stored holder %s holds it: %s", key, h, data)
					require.Equal(t, h, j.ID, key)
				} else {
					require.Equal(t, http.StatusCreated, status, "%s is free: %s", key, data)
				}
				answered[key] = j.ID
			}
			p.kill()
			keys, _ = storedKeys(t, dir)
			require.Equal(t, answered, holdersOf(t, keys), "every key held once, by the job the server named")
		})
	}
}
