package server

import (
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/zizq/zizq/api"
)

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.respond(w, r, http.StatusOK, api.Health{Status: "ok"})
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	s.respond(w, r, http.StatusOK, api.Version{Version: s.cfg.Version})
}

func (s *Server) queues(w http.ResponseWriter, r *http.Request) {
	names, err := s.core.Queues(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if names == nil {
		names = []string{}
	}
	s.respond(w, r, http.StatusOK, api.Queues{Queues: names})
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	if err := s.core.Reset(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	st, err := s.core.Stats(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	crons, err := s.core.CronSummaries(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	dbBytes, walBytes := s.core.Sizes()
	role := s.roleNow()
	out := api.Stats{
		Role:     role.Name(),
		Leader:   role.LeaderURL,
		Term:     role.Term,
		DBBytes:  dbBytes,
		WALBytes: walBytes,
		Version:  s.cfg.Version,
		UptimeMs: s.clock.Now().Sub(s.started).Milliseconds(),
		RSSBytes: residentBytes(),
		Jobs:     api.JobCounts{Scheduled: st.Jobs.Scheduled, Ready: st.Jobs.Ready, Parked: st.Jobs.Parked, InFlight: st.Jobs.InFlight},
		Queues:   make([]api.QueueStats, 0, len(st.Queues)),
		Budgets:  make([]api.Budget, 0, len(st.Budgets)),
		Crons:    wireCronStats(crons),
	}
	if role.Term > 0 {
		// A cluster's leader: its core started with its term.
		out.Node, out.TermMs = role.LeaderURL, s.clock.Now().Sub(st.Started).Milliseconds()
	}
	for _, q := range st.Queues {
		out.Queues = append(out.Queues, api.QueueStats{Name: q.Name, Scheduled: q.Scheduled, Ready: q.Ready, Parked: q.Parked, InFlight: q.InFlight})
	}
	for _, b := range st.Budgets {
		out.Budgets = append(out.Budgets, wireBudgetView(b))
	}
	s.respond(w, r, http.StatusOK, out)
}

// residentBytes reads the process's resident set size (Linux); 0 elsewhere.
func residentBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

func (s *Server) why(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	why, err := s.core.Why(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.Why{ID: id, Status: why.Job.Status.String(), WaitingFor: why.WaitingFor, Reason: why.Reason, Budgets: []api.WhyBudget{}, ReadyAt: uint64(why.Job.ReadyAt), ExpectedAt: why.ExpectedAt}
	if why.Finished {
		out.WaitingFor = api.WaitingFinished
	}
	for _, b := range why.Budgets {
		wb := api.WhyBudget{Key: b.Key, Cost: b.Cost, Available: b.Available, Ahead: b.Ahead, AffordableAt: b.AffordableAt, ReservedBy: b.ReservedBy,
			Paused: b.Paused, PausedUntil: b.PausedUntil, RepaidAt: b.RepaidAt,
			RefusedAt: b.RefusedAt, Effective: b.Effective, ThrottledUntil: b.ThrottledUntil}
		if b.Debt > 0 {
			debt := b.Debt
			wb.Debt = &debt
		}
		out.Budgets = append(out.Budgets, wb)
	}
	s.respond(w, r, http.StatusOK, out)
}
