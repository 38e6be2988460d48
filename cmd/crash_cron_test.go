package cmd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// cronCrashEntries fire every second, each its job in its own queue.
const cronCrashEntries = 40

// TestCrash_CronFiresExactlyOnce kills a real server with SIGKILL just
// after the second at which its entries fire, again and again. Each time,
// the store must hold each entry's last fire and its job together (neither
// without the other), and after the last restart every entry has caught
// up once and no occurrence has fired twice.
func TestCrash_CronFiresExactlyOnce(t *testing.T) {
	root := t.TempDir()
	entries := make([]map[string]any, cronCrashEntries)
	for i := range entries {
		entries[i] = map[string]any{
			"name": fmt.Sprintf("e%02d", i), "expression": "* * * * * *", "timezone": "UTC",
			"job": map[string]any{"type": "tick", "queue": fmt.Sprintf("q%02d", i), "payload": map[string]int{"n": i}},
		}
	}
	p := startServer(t, "--root-dir", root)
	status, data := do(t, "PUT", p.url+"/crons/crash", map[string]any{"entries": entries})
	require.Equal(t, http.StatusOK, status, "%s", data)

	fired := 0
	for cycle := range 4 {
		// Let a few seconds fire, then die a few milliseconds past a
		// second, while that second's fires commit.
		time.Sleep(time.Duration(1500+rand.IntN(1000)) * time.Millisecond)
		next := time.Now().Truncate(time.Second).Add(time.Second)
		time.Sleep(time.Until(next) + time.Duration(rand.IntN(25))*time.Millisecond)
		p.kill()
		fired += requireFiresWithTheirJobs(t, root, cycle)
		p = startServer(t, "--root-dir", root)
	}
	require.Positive(t, fired, "some occurrences fired before the kills")

	// After the last restart each entry catches up once at start, then
	// keeps going; stop it and look at every job.
	restarted := time.Now().UnixMilli()
	require.Eventually(t, func() bool {
		status, data := do(t, "GET", p.url+"/crons/crash", nil)
		return status == http.StatusOK && allFiredSince(t, data, restarted)
	}, 20*time.Second, 50*time.Millisecond, "every entry fires after the restart")
	status, _ = do(t, "DELETE", p.url+"/crons/crash", nil)
	require.Equal(t, http.StatusNoContent, status)
	jobs := allJobs(t, p.url)
	perEntry := map[string]map[int64]int{}
	for _, j := range jobs {
		if perEntry[j.Queue] == nil {
			perEntry[j.Queue] = map[int64]int{}
		}
		perEntry[j.Queue][int64(j.ReadyAt)/1000]++
	}
	require.Len(t, perEntry, cronCrashEntries, "every entry enqueued")
	for queue, seconds := range perEntry {
		for sec, n := range seconds {
			require.Equal(t, 1, n, "queue %s: %d jobs for the occurrence of second %d", queue, n, sec)
		}
	}
}

// requireFiresWithTheirJobs opens the store of a killed server and checks
// that each entry's last_enqueue_at is the ready_at of its newest job (the
// fire and the job committed together) and that its next occurrence comes
// after it. It returns how many jobs there are.
func requireFiresWithTheirJobs(t *testing.T, root string, cycle int) int {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(root, "data"), sqlite.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	groups, err := db.CronGroups(ctx)
	require.NoError(t, err)
	require.Len(t, groups, 1)
	require.Len(t, groups[0].Entries, cronCrashEntries)
	jobs, _, err := db.ListJobs(ctx, store.Filter{}, "", store.Asc, 1_000_000)
	require.NoError(t, err)
	newest := map[string]int64{}
	for _, j := range jobs {
		newest[j.Queue] = max(newest[j.Queue], j.ReadyAt)
	}
	for i, e := range groups[0].Entries {
		queue := fmt.Sprintf("q%02d", i)
		require.Equal(t, newest[queue], e.LastEnqueueAt, "cycle %d, entry %s: its last fire and its newest job", cycle, e.Name)
		require.Greater(t, e.NextEnqueueAt, e.LastEnqueueAt, "cycle %d, entry %s", cycle, e.Name)
	}
	return len(jobs)
}

// allFiredSince reports whether every entry of a group body has fired at
// or after ms.
func allFiredSince(t *testing.T, group []byte, ms int64) bool {
	var g api.CronGroup
	require.NoError(t, json.Unmarshal(group, &g))
	for _, e := range g.Entries {
		if int64(e.LastEnqueueAt) < ms {
			return false
		}
	}
	return len(g.Entries) > 0
}
