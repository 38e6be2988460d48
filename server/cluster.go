package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/election"
	"github.com/zizq/zizq/store"
)

// A cluster is any number of servers on one shared database (PostgreSQL,
// which the caller joins: see ClusterStore); one of them, the holder of
// the database's lease, leads: it runs the engine (and fires crons) as a
// lone server does, every write it makes fenced by its lease's term. The
// others follow: they answer /health, /version, /ready, /metrics and
// /stats themselves and forward every other request, take streams
// included, to the leader's advertised URL.
//
// The election (package election) decides the node's role. When the node
// is to lead it starts a server of the term, whose core loads the store
// exactly as a restart does; when it steps down it stops handing out jobs
// at once, ends its take streams and closes that core, whose pending
// writes fail the fence.

// ClusterOptions configure a server of a cluster.
type ClusterOptions struct {
	// Join connects the node to the cluster's database (required): m is
	// how the database is to know it.
	Join func(ctx context.Context, m Member) (ClusterStore, error)
	// AdvertiseURL is where the other servers reach this one.
	AdvertiseURL string
	// AdminURL is where this server's admin port is reached ("": it has
	// none); a follower's admin port names the leader's.
	AdminURL string
	// Lease is how long a leader's lease lasts after each renewal; 0
	// means DefaultLease.
	Lease time.Duration
}

// Member is a node as the cluster's database knows it.
type Member struct {
	// ID names the node: the holder of the lease while it leads, whose
	// writes are fenced by it.
	ID string
	// URL and AdminURL are what the lease advertises to the other nodes
	// (ClusterOptions.AdvertiseURL and AdminURL).
	URL, AdminURL string
	// Lease is how long the lease lasts after each renewal.
	Lease time.Duration
}

// ClusterStore is the database a cluster shares, as one node sees it: the
// lease the nodes compete for, held in the node's name, and the store of
// each term the node leads. The node opens it with ClusterOptions.Join and
// closes it once its election has stopped.
type ClusterStore interface {
	election.Lease
	// OpenTerm opens the store of term, which the node leads: every write
	// of it is fenced by the node's lease at term, so that once another
	// term has begun it fails and changes nothing. onCommit is the
	// metrics' hook of its transactions.
	OpenTerm(ctx context.Context, term int64, onCommit func(store.CommitInfo)) (store.Store, error)
	// Close lets the database go.
	Close()
}

// DefaultLease is the default of ClusterOptions.Lease (--lease).
const DefaultLease = 10 * time.Second

// Node is one server of a cluster.
type Node struct {
	opts   Options
	cl     ClusterOptions
	log    *slog.Logger
	id     string
	bare   *Server // answers the node's own endpoints
	db     ClusterStore
	elect  *election.Elector
	reg    *prometheus.Registry
	client *http.Client // probes the leader's /health

	mu    sync.Mutex
	state nodeState

	done chan struct{} // closed when the election loop has stopped
}

// nodeState is what the node knows of the cluster, under Node.mu.
type nodeState struct {
	leader    bool
	term      int64
	leaderURL string
	// leaderAdmin is the leader's admin URL ("": it has none).
	leaderAdmin string
	reachable   bool    // a follower reached the leader at its last probe
	srv         *Server // the leader's server of this term
	changed     chan struct{}
}

// NewNode joins the cluster's database (cl.Join) and returns a node that
// is a follower until Run's first election round. The server of each term
// it leads runs on opts, its store the term's (opts.OpenStore is not
// used).
func NewNode(ctx context.Context, opts Options, cl ClusterOptions) (*Node, error) {
	opts = opts.withDefaults()
	if cl.Join == nil {
		return nil, errors.New("no cluster database: ClusterOptions.Join is not set")
	}
	if cl.Lease <= 0 {
		cl.Lease = DefaultLease
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	db, err := cl.Join(ctx, Member{ID: id, URL: cl.AdvertiseURL, AdminURL: cl.AdminURL, Lease: cl.Lease})
	if err != nil {
		return nil, err
	}
	n := &Node{
		opts: opts, cl: cl, log: opts.Logger, db: db, id: id,
		bare:   newServer(opts.HTTP, opts.Clock, opts.Logger),
		reg:    prometheus.NewRegistry(),
		client: &http.Client{Timeout: time.Second},
		state:  nodeState{changed: make(chan struct{})},
		done:   make(chan struct{}),
	}
	n.elect = election.New(election.Config{
		Lease: db, TTL: cl.Lease, Roles: nodeRoles{n}, Clock: opts.Clock, Logger: opts.Logger,
		Node: n.id, URL: cl.AdvertiseURL,
	})
	n.reg.MustRegister(roleCollector{n.Role}, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return n, nil
}

// Role returns the node's role as it stands.
func (n *Node) Role() Role {
	n.mu.Lock()
	defer n.mu.Unlock()
	return Role{Leader: n.state.leader, LeaderURL: n.state.leaderURL, Term: n.state.term}
}

// Ready is closed once the node knows whether it leads.
func (n *Node) Ready() <-chan struct{} { return n.elect.Ready() }

// Leader returns the server of the term this node leads, or nil.
func (n *Node) Leader() *Server {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state.srv
}

// Run runs the election until ctx ends, then steps down and lets the lease
// go, so that another node takes over at once.
func (n *Node) Run(ctx context.Context) {
	defer close(n.done)
	defer n.db.Close()
	n.elect.Run(ctx)
}

// nodeRoles is the node as the election sees it: each of its role's
// changes, made by the election's goroutine.
type nodeRoles struct{ n *Node }

// TermFailed reports whether the server of the node's term could not load
// the store.
func (r nodeRoles) TermFailed() bool {
	srv := r.n.Leader()
	return srv != nil && srv.startFailed()
}

// Lead starts this node's server of term.
func (r nodeRoles) Lead(ctx context.Context, term int64) {
	n := r.n
	opts := n.opts
	opts.Role = n.Role
	opts.LeaseHeld = n.elect.Holding
	opts.Started = n.bare.started // the uptime is the process's, not the term's
	opts.OpenStore = func(ctx context.Context, onCommit func(store.CommitInfo)) (store.Store, error) {
		return n.db.OpenTerm(ctx, term, onCommit)
	}
	n.mu.Lock()
	n.state.leader, n.state.term, n.state.leaderURL, n.state.leaderAdmin = true, term, n.cl.AdvertiseURL, n.cl.AdminURL
	n.state.reachable = true
	n.state.srv = Start(ctx, opts)
	n.changedLocked()
	n.mu.Unlock()
}

// Follow records the leader of st and probes it.
func (r nodeRoles) Follow(st store.LeaseState) {
	n := r.n
	n.mu.Lock()
	n.state.leaderAdmin = st.AdminURL
	if n.state.leaderURL != st.URL || n.state.term != st.Term {
		n.state.leaderURL, n.state.term = st.URL, st.Term
		n.changedLocked()
	}
	n.mu.Unlock()
	n.setReachable(n.probe(st.URL))
}

// Unknown records that the leader's reachability is unknown.
func (r nodeRoles) Unknown() { r.n.setReachable(false) }

// StepDown stops leading: no more jobs go out (the election no longer
// holds the lease), take streams end, the core closes (its writes now
// fail the fence).
func (r nodeRoles) StepDown(string) {
	n := r.n
	n.mu.Lock()
	srv := n.state.srv
	n.state.leader, n.state.srv, n.state.leaderURL, n.state.leaderAdmin, n.state.reachable = false, nil, "", "", false
	n.changedLocked()
	n.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Close()
	if err := srv.CloseStore(); err != nil {
		n.log.Warn("close the store of the last term", "err", err)
	}
}

// probe reports whether the leader answers its /health.
func (n *Node) probe(leaderURL string) bool {
	resp, err := n.client.Get(leaderURL + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (n *Node) setReachable(ok bool) {
	n.mu.Lock()
	n.state.reachable = ok
	n.mu.Unlock()
}

// changedLocked ends the take streams forwarded so far: the leader
// changed.
func (n *Node) changedLocked() {
	close(n.state.changed)
	n.state.changed = make(chan struct{})
}

// Serve serves the node's HTTP API on l, and the admin port on al (nil:
// none), until ctx ends or either fails, and runs the election meanwhile.
func (n *Node) Serve(ctx context.Context, l, al net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go n.Run(ctx)
	adminErr := make(chan error, 1)
	if al != nil {
		go func() {
			err := n.serveUntil(ctx, n.bare.httpServer(n.bare.withProfiles(http.HandlerFunc(n.serveAdmin))), al, n.bare.cfg.AdminTLS)
			cancel()
			adminErr <- err
		}()
	} else {
		adminErr <- nil
	}
	err := n.serveUntil(ctx, n.bare.httpServer(n), l, n.bare.cfg.TLS)
	cancel()
	if aerr := <-adminErr; err == nil {
		err = aerr
	}
	return err
}

// serveUntil serves hs on l until ctx ends or the start fails; after ctx
// ends it waits for the election loop to step down (take streams and
// event streams ended) before it shuts hs down.
func (n *Node) serveUntil(ctx context.Context, hs *http.Server, l net.Listener, tlsCfg *tls.Config) error {
	errc := make(chan error, 1)
	go func() { errc <- n.bare.serveOn(hs, l, tlsCfg) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	<-n.done
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		_ = hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// serveAdmin answers the admin port: the leader's server of the term while
// this node leads. A follower answers 503 naming the leader's admin port:
// the event stream, backups and compaction are the leader's. It does not
// forward there: the admin port has (m)TLS of its own, and the leader's
// listens on loopback by default, out of the other nodes' reach.
func (n *Node) serveAdmin(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	srv, leaderURL, leaderAdmin := n.state.srv, n.state.leaderURL, n.state.leaderAdmin
	n.mu.Unlock()
	if srv != nil && n.elect.Holding() {
		srv.AdminHandler().ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", "1")
	var msg string
	switch {
	case leaderURL == "" || leaderURL == n.cl.AdvertiseURL:
		msg = "no leader: the cluster is electing one"
	case leaderAdmin == "":
		msg = "this server is a follower, and the leader (" + leaderURL + ") has no admin port"
	default:
		msg = "this server is a follower: use the admin port of the leader, " + leaderAdmin + " (the leader's API is " + leaderURL + ")"
	}
	n.bare.writeError(w, r, http.StatusServiceUnavailable, msg)
}

// ServeHTTP answers the node's own endpoints and passes every other
// request to the leader: this node's server of the term, or the leader's
// URL.
func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	srv, changed, leaderURL, reachable := n.state.srv, n.state.changed, n.state.leaderURL, n.state.reachable
	n.mu.Unlock()
	if srv != nil && n.elect.Holding() {
		srv.Handler().ServeHTTP(w, r)
		return
	}
	b := n.bare
	switch r.URL.Path {
	case "/health":
		b.health(w, r)
	case "/version":
		b.version(w, r)
	case "/ready":
		if !reachable {
			w.Header().Set("Retry-After", "1")
			b.writeError(w, r, http.StatusServiceUnavailable, "no leader reachable")
			return
		}
		b.respond(w, r, http.StatusOK, api.Health{Status: "ready"})
	case "/metrics":
		promhttp.HandlerFor(n.reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	case "/stats":
		n.followerStats(w, r)
	default:
		n.forward(w, r, leaderURL, changed)
	}
}

// followerStats answers GET /stats on a follower: the cluster's figures,
// which are the leader's (it asks the leader), with this node's own role,
// address, version, uptime and memory. Without a leader to ask it answers
// 503, never empty lists that would read as an empty queue.
func (n *Node) followerStats(w http.ResponseWriter, r *http.Request) {
	role := n.Role()
	if role.LeaderURL == "" || role.LeaderURL == n.cl.AdvertiseURL {
		w.Header().Set("Retry-After", "1")
		n.bare.writeError(w, r, http.StatusServiceUnavailable, "no leader: the cluster is electing one")
		return
	}
	st, err := n.leaderStats(r.Context(), role.LeaderURL)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		n.bare.writeError(w, r, http.StatusServiceUnavailable, "this server is a follower and could not get the cluster's stats from the leader: "+err.Error())
		return
	}
	st.Role, st.Leader, st.Term, st.Node = role.Name(), role.LeaderURL, role.Term, n.cl.AdvertiseURL
	st.Version, st.RSSBytes = n.bare.cfg.Version, residentBytes()
	st.UptimeMs = n.bare.clock.Now().Sub(n.bare.started).Milliseconds()
	n.bare.respond(w, r, http.StatusOK, st)
}

// leaderStatsTimeout bounds a follower's GET /stats of the leader.
const leaderStatsTimeout = 5 * time.Second

// leaderStats gets GET /stats of the leader at leaderURL.
func (n *Node) leaderStats(ctx context.Context, leaderURL string) (api.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, leaderStatsTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, leaderURL+"/stats", nil)
	if err != nil {
		return api.Stats{}, err
	}
	req.Header.Set("Accept", api.ContentType(api.JSON))
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return api.Stats{}, fmt.Errorf("leader %s unreachable: %w", leaderURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLeaderStats))
	if err != nil {
		return api.Stats{}, fmt.Errorf("read the leader's stats: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return api.Stats{}, fmt.Errorf("the leader answered %d: %s", resp.StatusCode, e.Error)
		}
		return api.Stats{}, fmt.Errorf("the leader answered %d", resp.StatusCode)
	}
	var st api.Stats
	if err := json.Unmarshal(body, &st); err != nil {
		return api.Stats{}, fmt.Errorf("decode the leader's stats: %w", err)
	}
	return st, nil
}

// maxLeaderStats bounds the leader's /stats body a follower reads (its
// budgets and queues are listed whole).
const maxLeaderStats = 256 << 20

// leaderChangedMsg answers a forwarded request the leader did not answer
// before another took over.
const leaderChangedMsg = "the leader changed before it answered: the request may or may not have taken effect"

// forward passes r to the leader, streaming the answer frame by frame; a
// take stream ends when the leader changes (its client reconnects).
func (n *Node) forward(w http.ResponseWriter, r *http.Request, leaderURL string, changed <-chan struct{}) {
	if leaderURL == "" || leaderURL == n.cl.AdvertiseURL {
		w.Header().Set("Retry-After", "1")
		n.bare.writeError(w, r, http.StatusServiceUnavailable, "no leader: the cluster is electing one")
		return
	}
	target, err := url.Parse(leaderURL)
	if err != nil {
		n.bare.writeError(w, r, http.StatusServiceUnavailable, "leader url: "+err.Error())
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-changed:
			cancel()
		case <-ctx.Done():
		}
	}()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.Header().Set("Retry-After", "1")
			if ctx.Err() != nil && r.Context().Err() == nil {
				// The leader changed before it answered: what the old
				// one did with the request is unknown.
				n.bare.writeError(w, r, http.StatusServiceUnavailable, leaderChangedMsg)
				return
			}
			n.bare.writeError(w, r, http.StatusBadGateway, "leader unreachable: "+err.Error())
		},
		ErrorLog: slog.NewLogLogger(n.log.Handler(), slog.LevelDebug),
	}
	proxy.ServeHTTP(w, r.WithContext(ctx))
}
