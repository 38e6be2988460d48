package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store/postgres"
	"github.com/zizq/zizq/store/postgres/pgtest"
)

// clusterNode is a node of a test cluster serving on 127.0.0.1:0.
type clusterNode struct {
	node  *server.Node
	url   string
	admin string // the admin port's URL
	stop  func()
}

func startNode(t *testing.T, dsn string) *clusterNode {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	al, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	node, err := server.NewNode(ctx, servertest.Options(t.TempDir()), server.ClusterOptions{
		DatabaseURL: dsn, AdvertiseURL: url, Lease: 900 * time.Millisecond,
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- node.Serve(ctx, l, al) }()
	n := &clusterNode{node: node, url: url, admin: "http://" + al.Addr().String()}
	var once bool
	n.stop = func() {
		if !once {
			once = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(n.stop)
	<-node.Ready()
	return n
}

func nodeGet(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func nodePost(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// The admin port of a cluster node is the leader's: backups and
// compaction there; a follower's answers 503 naming the leader.
func TestNode_AdminPortIsTheLeaders(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	a := startNode(t, dsn)
	require.Eventually(t, func() bool { s, _ := nodeGet(t, a.url+"/ready"); return s == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	b := startNode(t, dsn)
	require.True(t, a.node.Role().Leader)

	status, body := nodePost(t, a.admin+"/compact")
	require.Equal(t, http.StatusNoContent, status, "%s", body)
	status, body = nodePost(t, a.admin+"/backup")
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Equal(t, []byte{0x1f, 0x8b}, body[:2], "a tar.gz archive")

	for _, path := range []string{"/compact", "/backup"} {
		status, body = nodePost(t, b.admin+path)
		require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
		require.Contains(t, string(body), "use the admin port of the leader ("+a.url+")")
	}
}

// A follower answers its own endpoints, forwards the API to the leader,
// and leads once the leader stops (it lets its lease go).
func TestNode_FollowerForwardsThenLeads(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	a := startNode(t, dsn)
	require.Eventually(t, func() bool { s, _ := nodeGet(t, a.url+"/ready"); return s == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	b := startNode(t, dsn)
	require.True(t, a.node.Role().Leader)
	require.Equal(t, server.Role{LeaderURL: a.url, Term: 1}, b.node.Role())

	var st api.Stats
	status, body := nodeGet(t, b.url+"/stats")
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.NoError(t, json.Unmarshal(body, &st))
	require.Equal(t, "follower", st.Role)
	require.Equal(t, a.url, st.Leader)
	require.EqualValues(t, 1, st.Term)
	require.Eventually(t, func() bool { s, _ := nodeGet(t, b.url+"/ready"); return s == http.StatusOK }, 10*time.Second, 20*time.Millisecond,
		"a follower is ready while it reaches the leader")
	_, metrics := nodeGet(t, b.url+"/metrics")
	require.Contains(t, string(metrics), "zizq_cluster_leader 0")
	require.Contains(t, string(metrics), "zizq_cluster_term 1")

	resp, err := http.Post(b.url+"/jobs", "application/json", strings.NewReader(`{"type":"t","queue":"q","payload":1}`))
	require.NoError(t, err)
	var job api.Job
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&job))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	// A forwarded take stream ends when the leader goes.
	take, err := http.Get(b.url + "/jobs/take?queue=q")
	require.NoError(t, err)
	defer take.Body.Close()
	frames := api.NewFrameReader(take.Body, api.NDJSON)
	got, err := frames.Job()
	require.NoError(t, err)
	require.Equal(t, job.ID, got.ID)

	a.stop()
	for {
		if _, err := frames.Job(); err != nil {
			break // ended: the client reconnects
		}
	}
	require.Eventually(t, func() bool { return b.node.Role().Leader }, 10*time.Second, 20*time.Millisecond, "the follower takes the released lease")
	require.EqualValues(t, 2, b.node.Role().Term)
	require.Eventually(t, func() bool { s, _ := nodeGet(t, b.url+"/ready"); return s == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	status, body = nodeGet(t, b.url+"/jobs/"+job.ID)
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Contains(t, string(body), `"status":"ready"`, "the job in flight on the old leader is ready again")
}

// A follower whose leader does not answer is not ready, and says so to
// the requests it would forward.
func TestNode_FollowerNotReadyWithoutLeader(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	pool, err := postgres.NewPool(ctx, dsn, 1, nil)
	require.NoError(t, err)
	defer pool.Close()
	require.NoError(t, postgres.Migrate(ctx, pool, slog.New(slog.DiscardHandler)))
	// A leader that holds the lease and answers nobody.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, gone.Close())
	_, err = postgres.NewLease(pool, "gone", "http://"+gone.Addr().String(), time.Hour).Acquire(ctx, 0)
	require.NoError(t, err)

	b := startNode(t, dsn)
	require.Equal(t, "http://"+gone.Addr().String(), b.node.Role().LeaderURL)
	status, body := nodeGet(t, b.url+"/ready")
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
	require.Contains(t, string(body), "no leader reachable")
	status, body = nodeGet(t, b.url+"/health")
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, body = nodeGet(t, b.url+"/jobs")
	require.Equal(t, http.StatusBadGateway, status, "%s", body)
	require.Contains(t, string(body), `"error":"leader unreachable`)
}

// A leader whose server cannot start (here: a schema newer than this zizq)
// lets the lease go rather than hold it and serve nothing.
func TestNode_LeaderThatCannotStartLetsGo(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	node, err := server.NewNode(ctx, servertest.Options(t.TempDir()), server.ClusterOptions{
		DatabaseURL: dsn, AdvertiseURL: "http://127.0.0.1:1", Lease: 900 * time.Millisecond,
	})
	require.NoError(t, err)
	pool, err := postgres.NewPool(ctx, dsn, 1, nil)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `UPDATE schema_version SET version = 9999`)
	require.NoError(t, err)

	done := make(chan struct{})
	go func() { defer close(done); node.Run(ctx) }()
	require.Eventually(t, func() bool { return node.Role().Term >= 3 }, 20*time.Second, 20*time.Millisecond,
		"each failed term lets the lease go, and the next try raises the term")
	cancel()
	<-done
}
