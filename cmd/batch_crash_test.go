package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store/sqlite"
)

// foldItem is one batched item a client was answered 2xx for.
type foldItem struct {
	item  int
	jobID string
}

const (
	foldKeys  = 4
	foldLimit = 25 // items a batch holds before when seals it
)

// foldRequest is item n as zizq-node's batchConfig(foldLimit) sends it,
// with one of foldKeys keys.
func foldRequest(n int) map[string]any {
	return map[string]any{
		"type": "push", "queue": "push", "payload": []int{n},
		"batch": map[string]any{
			"key":  fmt.Sprint("push:k", n%foldKeys),
			"when": fmt.Sprintf("(($existing | .) + ($new | .)) | length <= %d", foldLimit),
			"fold": "$existing | . += ($new | .)",
		},
	}
}

// storm folds items into the batches until ctx ends, single and in bulks
// of three, and records the answered ones.
func storm(ctx context.Context, url string, next *atomic.Int64, mu *sync.Mutex, told *[]foldItem) {
	for i := 0; ctx.Err() == nil; i++ {
		if i%4 == 3 {
			items := []int{int(next.Add(1)), int(next.Add(1)), int(next.Add(1))}
			reqs := make([]any, len(items))
			for k, n := range items {
				reqs[k] = foldRequest(n)
			}
			status, data, err := tryDo("POST", url+"/jobs/bulk", map[string]any{"jobs": reqs})
			var out api.BulkJobs
			if err != nil || (status != 200 && status != 201) || json.Unmarshal(data, &out) != nil {
				continue
			}
			mu.Lock()
			for k, j := range out.Jobs {
				*told = append(*told, foldItem{item: items[k], jobID: j.ID})
			}
			mu.Unlock()
			continue
		}
		n := int(next.Add(1))
		status, data, err := tryDo("POST", url+"/jobs", foldRequest(n))
		var j api.Job
		if err != nil || (status != 200 && status != 201) || json.Unmarshal(data, &j) != nil {
			continue
		}
		mu.Lock()
		*told = append(*told, foldItem{item: n, jobID: j.ID})
		mu.Unlock()
	}
}

// TestCrash_KillNineDuringFolds kills a server with SIGKILL during a storm
// of folds into a few batches and restarts it: every payload is a whole
// fold (a JSON array of items, within the batch's limit), every item a
// client was answered for is in the job its answer named, no item is in
// two jobs, the count adds up, each key has one pending job again, and the
// batch workers died with the server.
func TestCrash_KillNineDuringFolds(t *testing.T) {
	root := t.TempDir()
	p := startServer(t, "--root-dir", root)
	var (
		next atomic.Int64
		mu   sync.Mutex
		told []foldItem
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	for range 8 {
		wg.Go(func() { storm(ctx, p.url, &next, &mu, &told) })
	}
	// Mid-storm, once it has folded a hundred items, however long a loaded
	// machine takes to.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(told) > 100
	}, time.Minute, 10*time.Millisecond, "the storm folded")
	workers := childrenOf(p.cmd.Process.Pid)
	p.kill() // mid-storm
	cancel()
	wg.Wait()
	t.Logf("%d items answered, %d batch workers", len(told), len(workers))
	if runtime.GOOS == "linux" {
		require.NotEmpty(t, workers, "batch workers ran")
		require.Eventually(t, func() bool { return len(alive(workers)) == 0 }, 10*time.Second, 20*time.Millisecond,
			"the batch workers die with the server")
	}

	db, err := sqlite.Open(context.Background(), filepath.Join(root, "data"), sqlite.Options{})
	require.NoError(t, err)
	require.NoError(t, db.IntegrityCheck(context.Background()))
	require.NoError(t, db.Close())

	p = startServer(t, "--root-dir", root)
	jobs := allJobs(t, p.url)
	in := map[int]string{} // item -> the job holding it
	for id, j := range jobs {
		var items []int
		require.NoError(t, json.Unmarshal(j.Payload, &items), "job %s holds a whole fold: %s", id, j.Payload)
		require.NotEmpty(t, items)
		require.LessOrEqual(t, len(items), foldLimit, "job %s: when bounds each batch", id)
		require.NotNil(t, j.Batch)
		for _, n := range items {
			prev, twice := in[n]
			require.False(t, twice, "item %d in %s and %s", n, prev, id)
			in[n] = id
			require.Equal(t, fmt.Sprint("push:k", n%foldKeys), j.Batch.Key, "item %d in a job of its own key", n)
		}
	}
	for _, f := range told {
		got, ok := in[f.item]
		require.True(t, ok, "item %d was answered 2xx and is lost", f.item)
		require.Equal(t, f.jobID, got, "item %d is in the job its answer named", f.item)
	}
	status, data := do(t, "GET", p.url+"/jobs/count", nil)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, fmt.Sprintf(`{"count":%d}`, len(jobs)), string(data), "the count adds up")

	// Each key has its pending job again (restored, not lost): an empty
	// item, which when always lets in, folds into it, and so does the next.
	for k := range foldKeys {
		empty := foldRequest(k)
		empty["payload"] = []int{}
		var a, b api.Job
		status, data = do(t, "POST", p.url+"/jobs", empty)
		require.Equal(t, http.StatusOK, status, "key %d: %s", k, data)
		require.NoError(t, json.Unmarshal(data, &a))
		status, data = do(t, "POST", p.url+"/jobs", empty)
		require.Equal(t, http.StatusOK, status, "%s", data)
		require.NoError(t, json.Unmarshal(data, &b))
		require.Equal(t, a.ID, b.ID)
		require.Equal(t, a.ID, newestOfKey(jobs, fmt.Sprint("push:k", k)), "the newest job of the key is its pending one")
	}
}

// newestOfKey returns the greatest ID among the jobs of a batch key.
func newestOfKey(jobs map[string]api.Job, key string) string {
	newest := ""
	for id, j := range jobs {
		if j.Batch != nil && j.Batch.Key == key && id > newest {
			newest = id
		}
	}
	return newest
}

// childrenOf returns the PIDs of pid's child processes (Linux; none
// elsewhere).
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(child); ok && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// parentOf reads a process's parent from /proc/PID/stat ("pid (comm) state
// ppid ...", comm may hold spaces).
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	_, rest, ok := strings.Cut(string(stat), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// alive returns the PIDs that still run (a zombie has ended).
func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if _, rest, ok := strings.Cut(string(stat), ") "); ok && !strings.HasPrefix(rest, "Z") {
			out = append(out, pid)
		}
	}
	return out
}
