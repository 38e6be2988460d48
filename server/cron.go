package server

import (
	"errors"
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

func (s *Server) cronRoutes() {
	r := s.router
	r.handle("GET", "/crons", s.listCrons)
	r.handle("DELETE", "/crons", s.deleteCrons)
	r.handle("GET", "/crons/{g}", s.getCronGroup)
	r.handle("PUT", "/crons/{g}", s.putCronGroup)
	r.handle("PATCH", "/crons/{g}", s.patchCronGroup)
	r.handle("DELETE", "/crons/{g}", s.deleteCronGroup)
	r.handle("POST", "/crons/{g}/entries", s.addCronEntry)
	r.handle("GET", "/crons/{g}/entries/{e}", s.getCronEntry)
	r.handle("PUT", "/crons/{g}/entries/{e}", s.putCronEntry)
	r.handle("PATCH", "/crons/{g}/entries/{e}", s.patchCronEntry)
	r.handle("DELETE", "/crons/{g}/entries/{e}", s.deleteCronEntry)
}

func (s *Server) listCrons(w http.ResponseWriter, r *http.Request) {
	names, err := s.core.CronGroupNames(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, api.CronList{Crons: names})
}

func (s *Server) deleteCrons(w http.ResponseWriter, r *http.Request) {
	n, err := s.core.DeleteCronGroups(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, api.Deleted{Deleted: int64(n)})
}

func (s *Server) getCronGroup(w http.ResponseWriter, r *http.Request) {
	g, err := s.core.CronGroup(r.Context(), r.PathValue("g"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireCronGroup(g))
}

func (s *Server) putCronGroup(w http.ResponseWriter, r *http.Request) {
	var req api.CronGroupRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	name := r.PathValue("g")
	spec, err := cronGroupSpec(name, &req, decodePrefix(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	g, err := s.core.PutCronGroup(r.Context(), name, spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireCronGroup(g))
}

func (s *Server) patchCronGroup(w http.ResponseWriter, r *http.Request) {
	paused, err := s.decodePause(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	g, err := s.core.PatchCronGroup(r.Context(), r.PathValue("g"), paused)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireCronGroup(g))
}

func (s *Server) deleteCronGroup(w http.ResponseWriter, r *http.Request) {
	if err := s.core.DeleteCronGroup(r.Context(), r.PathValue("g")); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}

func (s *Server) addCronEntry(w http.ResponseWriter, r *http.Request) {
	group, spec, err := s.decodeCronEntry(w, r, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.core.AddCronEntry(r.Context(), group, spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusCreated, wireCronEntry(e))
}

func (s *Server) getCronEntry(w http.ResponseWriter, r *http.Request) {
	e, err := s.core.CronEntry(r.Context(), r.PathValue("g"), r.PathValue("e"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireCronEntry(e))
}

func (s *Server) putCronEntry(w http.ResponseWriter, r *http.Request) {
	group, spec, err := s.decodeCronEntry(w, r, r.PathValue("e"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.core.PutCronEntry(r.Context(), group, spec)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireCronEntry(e))
}

func (s *Server) patchCronEntry(w http.ResponseWriter, r *http.Request) {
	paused, err := s.decodePause(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.core.PatchCronEntry(r.Context(), r.PathValue("g"), r.PathValue("e"), paused)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireCronEntry(e))
}

func (s *Server) deleteCronEntry(w http.ResponseWriter, r *http.Request) {
	if err := s.core.DeleteCronEntry(r.Context(), r.PathValue("g"), r.PathValue("e")); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}

// decodePause reads the body of a PATCH: {"paused": bool}, required.
func (s *Server) decodePause(w http.ResponseWriter, r *http.Request) (bool, error) {
	var req api.CronPause
	if err := s.decode(w, r, &req); err != nil {
		return false, err
	}
	if req.Paused == nil {
		return false, missing(decodePrefix(r), "paused")
	}
	return *req.Paused, nil
}

// decodeCronEntry reads and checks the entry of POST and PUT; urlName,
// when set, is the entry's name (the body's must still be there).
func (s *Server) decodeCronEntry(w http.ResponseWriter, r *http.Request, urlName string) (string, core.CronEntrySpec, error) {
	var req api.CronEntryRequest
	if err := s.decode(w, r, &req); err != nil {
		return "", core.CronEntrySpec{}, err
	}
	group := r.PathValue("g")
	if err := api.ValidateName("cron group name", group); err != nil {
		return "", core.CronEntrySpec{}, badRequest("%s", err)
	}
	spec, err := cronEntrySpec(&req, decodePrefix(r))
	if err != nil {
		return "", core.CronEntrySpec{}, err
	}
	if urlName != "" {
		if err := api.ValidateName("cron entry name", urlName); err != nil {
			return "", core.CronEntrySpec{}, badRequest("%s", err)
		}
		spec.Name = urlName
	}
	return group, spec, nil
}

// cronGroupSpec checks a PUT /crons/{g} body (the checks that need no
// server state; the core parses expressions and timezones).
func cronGroupSpec(name string, req *api.CronGroupRequest, prefix string) (core.CronGroupSpec, error) {
	if err := api.ValidateName("cron group name", name); err != nil {
		return core.CronGroupSpec{}, badRequest("%s", err)
	}
	if req.Entries == nil {
		return core.CronGroupSpec{}, missing(prefix, "entries")
	}
	spec := core.CronGroupSpec{Paused: req.Paused, Entries: make([]core.CronEntrySpec, 0, len(req.Entries))}
	if req.Timezone != nil {
		if *req.Timezone == "" {
			return core.CronGroupSpec{}, badRequest(`invalid timezone: ""`)
		}
		spec.Timezone = *req.Timezone
	}
	seen := map[string]bool{}
	for i := range req.Entries {
		if n := req.Entries[i].Name; n != nil {
			if seen[*n] {
				return core.CronGroupSpec{}, badRequest("duplicate cron entry name: %q", *n)
			}
			seen[*n] = true
		}
	}
	for i := range req.Entries {
		e, err := cronEntrySpec(&req.Entries[i], prefix)
		if err != nil {
			return core.CronGroupSpec{}, inCronEntry(i, req.Entries[i].Name, err)
		}
		spec.Entries = append(spec.Entries, e)
	}
	return spec, nil
}

// inCronEntry says which entry of a group's body a refusal is about.
func inCronEntry(i int, name *string, err error) error {
	var he *httpError
	if !errors.As(err, &he) {
		return err
	}
	label := core.CronEntryLabel(i, "")
	if name != nil {
		label = core.CronEntryLabel(i, *name)
	}
	return &httpError{status: he.status, msg: label + ": " + he.msg, supported: he.supported}
}

// cronEntrySpec checks one entry: its name and its job, validated as an
// enqueue request (without ready_at).
func cronEntrySpec(req *api.CronEntryRequest, prefix string) (core.CronEntrySpec, error) {
	switch {
	case req.Name == nil:
		return core.CronEntrySpec{}, missing(prefix, "name")
	case req.Expression == nil:
		return core.CronEntrySpec{}, missing(prefix, "expression")
	case req.Job == nil:
		return core.CronEntrySpec{}, missing(prefix, "job")
	}
	if err := api.ValidateName("cron entry name", *req.Name); err != nil {
		return core.CronEntrySpec{}, badRequest("%s", err)
	}
	if req.Job.ReadyAt != nil {
		return core.CronEntrySpec{}, badRequest("ready_at is not supported for cron entries")
	}
	if req.Job.StartBy != nil {
		return core.CronEntrySpec{}, badRequest("start_by is not supported for cron entries: use start_within_ms")
	}
	job, err := newJob(req.Job, prefix)
	if err != nil {
		return core.CronEntrySpec{}, err
	}
	spec := core.CronEntrySpec{Name: *req.Name, Expression: *req.Expression, Paused: req.Paused, Job: job}
	if req.Timezone != nil {
		if *req.Timezone == "" {
			return core.CronEntrySpec{}, badRequest(`invalid timezone: ""`)
		}
		spec.Timezone = *req.Timezone
	}
	return spec, nil
}

func wireCronGroup(g core.CronGroup) api.CronGroup {
	out := api.CronGroup{
		Name: g.Name, Paused: g.Paused, PausedAt: uint64(g.PausedAt), ResumedAt: uint64(g.ResumedAt),
		Timezone: g.Timezone, Entries: make([]api.CronEntry, 0, len(g.Entries)),
	}
	for _, e := range g.Entries {
		out.Entries = append(out.Entries, wireCronEntry(e))
	}
	return out
}

func wireCronEntry(e core.CronEntry) api.CronEntry {
	return api.CronEntry{
		Name: e.Name, Expression: e.Expression, Timezone: e.Timezone, Paused: e.Paused,
		PausedAt: uint64(e.PausedAt), ResumedAt: uint64(e.ResumedAt), Job: wireTemplate(e.Job),
		NextEnqueueAt: uint64(e.NextEnqueueAt), LastEnqueueAt: uint64(e.LastEnqueueAt),
	}
}

// wireTemplate echoes a job template as an enqueue request: priority and costs
// materialised, create_with kept (docs/API.md §Budgets in job responses),
// payload always.
func wireTemplate(j core.NewJob) api.EnqueueRequest {
	out := api.EnqueueRequest{
		Type: &j.Type, Queue: &j.Queue, Payload: api.Payload(j.Payload), Priority: &j.Priority,
		RetryLimit: j.RetryLimit,
	}
	if j.StartWithinMs != 0 {
		out.StartWithinMs = &j.StartWithinMs
	}
	if len(out.Payload) == 0 {
		out.Payload = api.Payload("null")
	}
	if j.UniqueKey != "" {
		while := j.UniqueWhile.String()
		out.UniqueKey, out.UniqueWhile = &j.UniqueKey, &while
	}
	if b := j.Batch; b != nil {
		out.Batch = &api.BatchRequest{Key: &b.Key, When: &b.When, Fold: &b.Fold}
	}
	if b := j.Backoff; b != nil {
		out.Backoff = &api.BackoffRequest{Exponent: &b.Exponent, BaseMs: &b.BaseMs, JitterMs: &b.JitterMs}
	}
	if r := j.Retention; r != nil {
		out.Retention = &api.Retention{CompletedMs: r.CompletedMs, DeadMs: r.DeadMs}
	}
	for _, b := range j.Budgets {
		wb := api.BindingRequest{Key: &b.Key, Cost: &b.Cost}
		if c := b.CreateWith; c != nil {
			wb.CreateWith = wireBudgetInput(*c)
		}
		out.Budgets = append(out.Budgets, wb)
	}
	return out
}

// wireBudgetInput renders a create_with as it was sent.
func wireBudgetInput(b store.Budget) *api.BudgetInput {
	in := &api.BudgetInput{Allocation: &b.Allocation, Strategy: &api.StrategyInput{Type: &b.Strategy}}
	if b.Strategy == store.TimeBased {
		in.Strategy.DurationMs = &b.DurationMs
		if b.Burst > 0 {
			in.Strategy.Burst = &b.Burst
		}
	}
	return in
}

func wireCronStats(sums []core.CronSummary) []api.CronStats {
	out := make([]api.CronStats, 0, len(sums))
	for _, c := range sums {
		out = append(out, api.CronStats{
			Name: c.Name, Paused: c.Paused, Entries: c.Entries, PausedEntries: c.PausedEntries,
			NextEnqueueAt: uint64(c.NextEnqueueAt), NextEntry: c.NextEntry, LastEnqueueAt: uint64(c.LastEnqueueAt),
		})
	}
	return out
}
