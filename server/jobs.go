package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/itchyny/gojq"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

func (s *Server) enqueue(w http.ResponseWriter, r *http.Request) {
	var req api.EnqueueRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	spec, err := newJob(&req, decodePrefix(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	jobs, err := s.core.Enqueue(r.Context(), []core.NewJob{spec})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, enqueueStatus(jobs), enqueued(jobs[0]))
}

// enqueueStatus is 200 when every request found its job already there (a
// unique duplicate, or the pending job of its batch, which it folded into),
// else 201: something was created, or nothing was asked.
func enqueueStatus(jobs []core.Enqueued) int {
	if len(jobs) == 0 {
		return http.StatusCreated
	}
	for _, j := range jobs {
		if !j.Duplicate && !j.Folded {
			return http.StatusCreated
		}
	}
	return http.StatusOK
}

func (s *Server) enqueueBulk(w http.ResponseWriter, r *http.Request) {
	var req api.BulkEnqueueRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Jobs == nil {
		s.fail(w, r, missing(decodePrefix(r), "jobs"))
		return
	}
	specs := make([]core.NewJob, len(req.Jobs))
	for i := range req.Jobs {
		spec, err := newJob(&req.Jobs[i], decodePrefix(r))
		if err != nil {
			s.fail(w, r, itemError(i, err))
			return
		}
		specs[i] = spec
	}
	out := api.BulkJobs{Jobs: []api.Job{}}
	var jobs []core.Enqueued
	if len(specs) > 0 {
		var err error
		jobs, err = s.core.Enqueue(r.Context(), specs)
		if err != nil {
			s.fail(w, r, itemError(-1, err))
			return
		}
		out.Jobs = make([]api.Job, 0, len(jobs)) // up to a thousand of 256 bytes: not grown in steps
		for _, j := range jobs {
			out.Jobs = append(out.Jobs, enqueued(j))
		}
	}
	s.respond(w, r, enqueueStatus(jobs), out)
}

// itemError prefixes a bulk item's error with its index ("jobs[3]: ").
func itemError(i int, err error) error {
	var ce *core.Error
	if errors.As(err, &ce) && ce.Item >= 0 {
		return &core.Error{Kind: ce.Kind, Msg: fmt.Sprintf("jobs[%d]: %s", ce.Item, ce.Msg), Item: ce.Item}
	}
	var he *httpError
	if errors.As(err, &he) && i >= 0 {
		return &httpError{status: he.status, msg: fmt.Sprintf("jobs[%d]: %s", i, he.msg)}
	}
	return err
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.core.Job(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireJob(j, true))
}

func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	if err := s.core.DeleteJob(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}

// filter parses a job query into the core's filter, compiling its jq
// filter.
func (s *Server) filter(r *http.Request, paging bool) (api.JobQuery, core.Filter, error) {
	q, err := api.ParseJobQuery(r.URL.Query(), paging)
	if err != nil {
		return q, core.Filter{}, err
	}
	f := store.Filter{
		IDs: q.IDs, Queues: q.Queues, Types: q.Types, BudgetKeys: q.BudgetKeys,
		Priority: storeRange(q.Priority), ReadyAt: storeRange(q.ReadyAt), Attempts: storeRange(q.Attempts),
		Now: s.nowMs(),
	}
	for _, name := range q.Statuses {
		st, _ := store.ParseStatus(name)
		f.Statuses = append(f.Statuses, st)
	}
	if q.Filter != "" {
		match, err := jqMatcher(r.Context(), q.Filter)
		if err != nil {
			return q, core.Filter{}, err
		}
		f.Match = match
	}
	return q, core.Filter{Filter: f, Parked: q.Parked}, nil
}

func storeRange(r *api.Range) *store.Range {
	if r == nil {
		return nil
	}
	return &store.Range{Lo: r.Lo, Hi: r.Hi}
}

// jqMatcher compiles a jq filter over payloads: a job matches when any
// output is truthy; runtime errors mean no match.
func jqMatcher(ctx context.Context, src string) (func([]byte) bool, error) {
	query, err := gojq.Parse(src)
	if err != nil {
		return nil, badRequest("invalid filter: %v", err)
	}
	code, err := gojq.Compile(query)
	if err != nil {
		return nil, badRequest("invalid filter: %v", err)
	}
	return func(payload []byte) bool {
		var v any
		if err := json.Unmarshal(payload, &v); err != nil {
			return false
		}
		iter := code.RunWithContext(ctx, v)
		for {
			out, ok := iter.Next()
			if !ok {
				return false
			}
			if _, isErr := out.(error); isErr {
				return false
			}
			if out != nil && out != false {
				return true
			}
		}
	}, nil
}

// maxFilterTime bounds a listing or count that runs a jq filter over many
// payloads, so one expensive filter cannot occupy the server indefinitely.
const maxFilterTime = 30 * time.Second

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), maxFilterTime)
	defer cancel()
	r = r.WithContext(ctx)
	q, f, err := s.filter(r, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	order := store.Asc
	if q.Order == "desc" {
		order = store.Desc
	}
	jobs, more, err := s.core.Jobs(r.Context(), f, q.From, order, q.Limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.JobList{Jobs: make([]api.Job, 0, len(jobs))}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, wireJob(j, true))
	}
	out.Pages = q.Pages(out.Jobs, more)
	s.respond(w, r, http.StatusOK, out)
}

func (s *Server) countJobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), maxFilterTime)
	defer cancel()
	r = r.WithContext(ctx)
	_, f, err := s.filter(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.core.Count(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, api.Count{Count: n})
}

func (s *Server) deleteJobs(w http.ResponseWriter, r *http.Request) {
	_, f, err := s.filter(r, false)
	var n int64
	if err == nil {
		n, err = s.core.DeleteJobs(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, api.Deleted{Deleted: n})
}

func (s *Server) patchJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := s.decodeJobPatch(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, err := s.core.PatchJob(r.Context(), id, p.apply)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireJob(j, false))
}

func (s *Server) patchJobs(w http.ResponseWriter, r *http.Request) {
	q, f, err := s.filter(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, st := range q.Statuses {
		if st == "completed" || st == "dead" {
			s.fail(w, r, unprocessable("cannot patch jobs in %s status", capitalised(st)))
			return
		}
	}
	p, err := s.decodeJobPatch(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// One journal group: every patch commits, or none does and the request
	// answers 503. Jobs finished meanwhile, or refused, are skipped.
	patched, err := s.core.PatchJobs(r.Context(), f, p.apply)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, api.Patched{Patched: patched})
}

func capitalised(status string) string {
	if status == "" {
		return status
	}
	return string(status[0]-'a'+'A') + status[1:]
}

func (s *Server) listErrors(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q, err := api.ParseErrorsQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o := store.Asc
	if q.Order == "desc" {
		o = store.Desc
	}
	recs, more, err := s.core.Errors(r.Context(), id, q.From, o, q.Limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := api.ErrorList{Errors: make([]api.ErrorRecord, 0, len(recs))}
	for _, rec := range recs {
		out.Errors = append(out.Errors, wireError(rec))
	}
	out.Pages = q.Pages(id, out.Errors, more)
	s.respond(w, r, http.StatusOK, out)
}

func (s *Server) getError(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	attempt, err := strconv.ParseUint(r.PathValue("attempt"), 10, 32)
	if err != nil {
		s.fail(w, r, badRequest("invalid attempt: %q", r.PathValue("attempt")))
		return
	}
	rec, err := s.core.Error(r.Context(), id, uint32(attempt))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireError(rec))
}

func wireError(rec store.ErrorRecord) api.ErrorRecord {
	return api.ErrorRecord{
		Attempt: rec.Attempt, Message: rec.Message, ErrorType: rec.ErrorType, Backtrace: rec.Backtrace,
		DequeuedAt: uint64(rec.DequeuedAt), FailedAt: uint64(rec.FailedAt),
	}
}
