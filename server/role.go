package server

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Role is a server's place in its cluster: a SQLite server is alone and
// leads; in a cluster on PostgreSQL one server leads (its lease's Term)
// and the others forward to LeaderURL.
type Role struct {
	Leader    bool
	LeaderURL string // "" when unknown (and for a lone server)
	Term      int64  // 0 for a lone server
}

func loneRole() Role { return Role{Leader: true} }

// Name is the role's wire name in GET /stats.
func (r Role) Name() string {
	if r.Leader {
		return "leader"
	}
	return "follower"
}

func (s *Server) roleNow() Role { return s.role() }

// startFailed reports whether the server's start (its store's opening and
// load) failed for good.
func (s *Server) startFailed() bool {
	select {
	case <-s.core.Failed():
		return true
	default:
		return false
	}
}

var (
	descLeader = prometheus.NewDesc("zizq_cluster_leader", "1 while this server is its cluster's leader (a SQLite server always is), else 0.", nil, nil)
	descTerm   = prometheus.NewDesc("zizq_cluster_term", "The term of the cluster's lease as this server last saw it (0 for a SQLite server).", nil, nil)
)

// roleCollector reports the role and term at scrape time.
type roleCollector struct{ role func() Role }

func (c roleCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLeader
	ch <- descTerm
}

func (c roleCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.role()
	leader := 0.0
	if r.Leader {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(descLeader, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(descTerm, prometheus.GaugeValue, float64(r.Term))
}
