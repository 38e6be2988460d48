package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store/postgres"
	"github.com/zizq/zizq/store/postgres/pgtest"
	"github.com/zizq/zizq/store/sqlite"
)

// clusterNode is a node of a test cluster serving on 127.0.0.1:0.
type clusterNode struct {
	node  *server.Node
	url   string
	admin string // the admin port's URL
	stop  func()
}

// startNode starts a node of the cluster on dsn; tune adjusts its options.
func startNode(t *testing.T, dsn string, tune ...func(*server.Options)) *clusterNode {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	al, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	admin := "http://" + al.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	opts := servertest.Options(t.TempDir())
	for _, f := range tune {
		f(&opts)
	}
	node, err := server.NewNode(ctx, opts, server.ClusterOptions{
		Join: joinOn(dsn, opts.Logger), AdvertiseURL: url, AdminURL: admin, Lease: 900 * time.Millisecond,
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- node.Serve(ctx, l, al) }()
	n := &clusterNode{node: node, url: url, admin: admin}
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

// joinOn joins the cluster on the PostgreSQL database at dsn, as `zizq
// serve --database-url` does; each term's store logs to log.
func joinOn(dsn string, log *slog.Logger) func(context.Context, server.Member) (server.ClusterStore, error) {
	return func(ctx context.Context, m server.Member) (server.ClusterStore, error) {
		c, err := postgres.JoinCluster(ctx, postgres.Options{URL: dsn, Logger: log, Archive: sqlite.ArchiveBody{}}, m.ID, m.URL, m.AdminURL, m.Lease)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
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
// compaction there; a follower's answers 503 naming the leader's admin
// port.
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
		require.Contains(t, string(body), "use the admin port of the leader, "+a.admin+" (the leader's API is "+a.url+")")
	}
}

// With --pprof each node's admin port serves its own process's profiles,
// a follower's too: a profile is of the process that answers it.
func TestNode_ProfilesOnEveryNode(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	pprof := func(o *server.Options) { o.HTTP.Pprof = true }
	a := startNode(t, dsn, pprof)
	require.Eventually(t, func() bool { s, _ := nodeGet(t, a.url+"/ready"); return s == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	b := startNode(t, dsn, pprof)
	require.True(t, a.node.Role().Leader)
	for _, n := range []*clusterNode{a, b} {
		status, body := nodeGet(t, n.admin+"/debug/pprof/goroutine?debug=1")
		require.Equal(t, http.StatusOK, status, "%s", body)
		require.Contains(t, string(body), "goroutine profile:")
	}
	status, body := nodePost(t, b.admin+"/compact")
	require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
}

// A follower answers its own endpoints, forwards the API to the leader,
// and leads once the leader stops (it lets its lease go).
func TestNode_FollowerForwardsThenLeads(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	a := startNode(t, dsn)
	require.Eventually(t, func() bool { s, _ := nodeGet(t, a.url+"/ready"); return s == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	b := startNode(t, dsn)
	bStarted := time.Now()
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

	// The follower's /stats are the cluster's (the leader's figures),
	// with its own role and address.
	status, body = nodeGet(t, b.url+"/stats")
	require.Equal(t, http.StatusOK, status, "%s", body)
	st = api.Stats{}
	require.NoError(t, json.Unmarshal(body, &st))
	require.Equal(t, "follower", st.Role)
	require.Equal(t, a.url, st.Leader)
	require.Equal(t, b.url, st.Node)
	require.EqualValues(t, 1, st.Jobs.Ready, "%s", body)
	require.Equal(t, []api.QueueStats{{Name: "q", Ready: 1}}, st.Queues)

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
	ledAt := time.Now()
	status, body = nodeGet(t, b.url+"/stats")
	require.Equal(t, http.StatusOK, status, "%s", body)
	st = api.Stats{}
	require.NoError(t, json.Unmarshal(body, &st))
	require.Equal(t, "leader", st.Role)
	require.Equal(t, b.url, st.Node)
	require.GreaterOrEqual(t, st.UptimeMs, ledAt.Sub(bStarted).Milliseconds(), "the uptime is the process's, from before it led")
	require.Less(t, st.TermMs, st.UptimeMs, "the term began after the process")
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
	_, err = postgres.NewLease(pool, "gone", "http://"+gone.Addr().String(), "", time.Hour).Acquire(ctx, 0)
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
	opts := servertest.Options(t.TempDir())
	node, err := server.NewNode(ctx, opts, server.ClusterOptions{
		Join: joinOn(dsn, opts.Logger), AdvertiseURL: "http://127.0.0.1:1", Lease: 900 * time.Millisecond,
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

// logRecords keeps every record logged to it, for tests that read the
// log.
type logRecords struct {
	mu   sync.Mutex
	recs []map[string]any
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }

func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message, "level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.Any()
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, m)
	l.mu.Unlock()
	return nil
}

// find returns the records whose message starts with msg.
func (l *logRecords) find(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.recs {
		if strings.HasPrefix(r["msg"].(string), msg) {
			out = append(out, r)
		}
	}
	return out
}

// takeLease takes the cluster's lease on dsn for holder at url, at once
// (the lease in force is made to expire first), and returns its term.
func takeLease(t *testing.T, dsn, holder, url string) int64 {
	t.Helper()
	ctx := context.Background()
	pool, err := postgres.NewPool(ctx, dsn, 1, nil)
	require.NoError(t, err)
	defer pool.Close()
	require.NoError(t, postgres.Migrate(ctx, pool, slog.New(slog.DiscardHandler)))
	// A leader that renews between the expiry and the attempt keeps the
	// lease (more likely on a loaded machine): expire it and try again.
	lease := postgres.NewLease(pool, holder, url, "", time.Hour)
	var term int64
	require.Eventually(t, func() bool {
		expireLease(t, dsn)
		st, err := lease.Acquire(ctx, 0)
		require.NoError(t, err)
		term = st.Term
		return st.Held
	}, 20*time.Second, 10*time.Millisecond, "%s never took the lease", holder)
	return term
}

// A request a follower forwards to a leader that is deposed before it
// answers gets 503 saying so (its outcome is unknown), not an error that
// blames the network; every term change is logged with its term and node.
func TestNode_ForwardCutByLeaderChange(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	// A leader that takes requests and never answers them (stopped).
	received := make(chan struct{}, 1)
	release := make(chan struct{})
	frozen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case received <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer frozen.Close()
	defer close(release)
	frozenTerm := takeLease(t, dsn, "frozen", frozen.URL)

	logs := &logRecords{}
	b := startNode(t, dsn, func(o *server.Options) { o.Logger = slog.New(logs) })
	require.Equal(t, frozen.URL, b.node.Role().LeaderURL)

	type answer struct {
		status int
		body   string
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post(b.url+"/jobs", "application/json", strings.NewReader(`{"type":"t","queue":"q","payload":1}`))
		if err != nil {
			answered <- answer{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, string(body)}
	}()
	<-received
	// The frozen leader's lease expires: b takes over.
	expireLease(t, dsn)
	got := <-answered
	require.Equal(t, http.StatusServiceUnavailable, got.status, "%s", got.body)
	require.Contains(t, got.body, "the leader changed before it answered: the request may or may not have taken effect")
	require.True(t, b.node.Role().Leader)

	following := logs.find("following")
	require.NotEmpty(t, following)
	require.EqualValues(t, frozenTerm, following[0]["term"])
	require.Equal(t, frozen.URL, following[0]["leader"])
	require.NotEmpty(t, following[0]["node"])
	acquired := logs.find("lease acquired")
	require.Len(t, acquired, 1)
	require.EqualValues(t, frozenTerm+1, acquired[0]["term"])
	require.Equal(t, following[0]["node"], acquired[0]["node"], "the node names itself alike in each line")

	// Another takes the lease from b, once it serves: b logs that it lost
	// its term.
	require.Eventually(t, func() bool { s, _ := nodeGet(t, b.url+"/ready"); return s == http.StatusOK }, 10*time.Second, 20*time.Millisecond)
	takeLease(t, dsn, "other", frozen.URL)
	require.Eventually(t, func() bool { return len(logs.find("lease lost")) > 0 }, 10*time.Second, 20*time.Millisecond)
	lost := logs.find("lease lost")[0]
	require.EqualValues(t, frozenTerm+1, lost["term"])
	require.Equal(t, acquired[0]["node"], lost["node"])
	// Either way of learning it: the renewal finds the other holder, or,
	// when a loaded machine pauses b past its lease, b wakes to a term
	// that ended meanwhile.
	require.Regexp(t, `another server holds the lease|the term ended meanwhile`, lost["reason"])
}

// expireLease ends the lease in force at once.
func expireLease(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	pool, err := postgres.NewPool(ctx, dsn, 1, nil)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `UPDATE leader SET expires_at = now() - interval '1 second'`)
	require.NoError(t, err)
}
