package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/itchyny/gojq"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/engine"
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
	jobs, waiter, err := s.engine.Enqueue([]engine.NewJob{spec})
	if err == nil {
		err = s.admit(r.Context(), jobs, []engine.NewJob{spec}, waiter)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusCreated, enqueued(jobs[0]))
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
	specs := make([]engine.NewJob, len(req.Jobs))
	for i := range req.Jobs {
		spec, err := newJob(&req.Jobs[i], decodePrefix(r))
		if err != nil {
			s.fail(w, r, itemError(i, err))
			return
		}
		specs[i] = spec
	}
	out := api.BulkJobs{Jobs: []api.Job{}}
	if len(specs) > 0 {
		jobs, waiter, err := s.engine.Enqueue(specs)
		if err == nil {
			err = s.admit(r.Context(), jobs, specs, waiter)
		}
		if err != nil {
			s.fail(w, r, itemError(-1, err))
			return
		}
		for _, j := range jobs {
			out.Jobs = append(out.Jobs, enqueued(j))
		}
	}
	s.respond(w, r, http.StatusCreated, out)
}

// itemError prefixes a bulk item's error with its index ("jobs[3]: ").
func itemError(i int, err error) error {
	if ee, ok := err.(*engine.Error); ok && ee.Item >= 0 {
		i = ee.Item
		return &engine.Error{Kind: ee.Kind, Msg: fmt.Sprintf("jobs[%d]: %s", i, ee.Msg), Item: i}
	}
	if he, ok := err.(*httpError); ok && i >= 0 {
		return &httpError{status: he.status, msg: fmt.Sprintf("jobs[%d]: %s", i, he.msg)}
	}
	return err
}

// lookup finds a job: live jobs from the engine (exact status), others from
// the store.
func (s *Server) lookup(ctx context.Context, id string) (store.Job, error) {
	if j, ok := s.engine.Job(id); ok {
		return j, nil
	}
	j, err := s.db.GetJob(ctx, id, s.nowMs())
	if err != nil {
		if err == store.ErrNotFound {
			// It may have been enqueued since we asked the engine.
			if j, ok := s.engine.Job(id); ok {
				return j, nil
			}
			return store.Job{}, notFound("job not found")
		}
		return store.Job{}, fmt.Errorf("get job: %w", err)
	}
	return j, nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireJob(j, true))
}

func (s *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.lookup(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	_, waiter := s.engine.Delete([]string{id})
	if err := wait(r.Context(), waiter); err != nil {
		s.fail(w, r, err)
		return
	}
	noContent(w)
}

// filter parses a job query into a store filter, compiling its jq filter.
func (s *Server) filter(r *http.Request, paging bool) (api.JobQuery, store.Filter, error) {
	q, err := api.ParseJobQuery(r.URL.Query(), paging)
	if err != nil {
		return q, store.Filter{}, err
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
			return q, f, err
		}
		f.Match = match
	}
	if q.Parked {
		s.narrowToParked(&f)
	}
	return q, f, nil
}

// narrowToParked narrows f to the jobs parked now, read once from the live
// state. It runs before the store's barrier, so the store is at least as
// new as that reading. A parked job's status is ready: a filter by other
// statuses selects none, and a job dispatched since, in flight in the
// store, is no longer parked.
func (s *Server) narrowToParked(f *store.Filter) {
	ids := s.engine.Parked()
	if len(f.Statuses) > 0 && !slices.Contains(f.Statuses, store.Ready) {
		ids = nil
	}
	f.Within = store.NewIDSet(ids)
	f.Statuses = []store.Status{store.Ready}
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
	if err == nil {
		err = s.db.Barrier(r.Context())
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	order := store.Asc
	if q.Order == "desc" {
		order = store.Desc
	}
	jobs, more, err := s.db.ListJobs(r.Context(), f, q.From, order, q.Limit)
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
	if err == nil {
		err = s.db.Barrier(r.Context())
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	n, err := s.db.CountJobs(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, api.Count{Count: n})
}

// matching returns the IDs of the jobs a filter selects, as of now.
func (s *Server) matching(ctx context.Context, f store.Filter) ([]string, error) {
	if err := s.db.Barrier(ctx); err != nil {
		return nil, err
	}
	return s.db.JobIDs(ctx, f)
}

func (s *Server) deleteJobs(w http.ResponseWriter, r *http.Request) {
	_, f, err := s.filter(r, false)
	var ids []string
	if err == nil {
		ids, err = s.matching(r.Context(), f)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var waiter engine.Waiter
	if len(ids) > 0 {
		_, waiter = s.engine.Delete(ids)
	}
	if err := wait(r.Context(), waiter); err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, api.Deleted{Deleted: int64(len(ids))})
}

func (s *Server) patchJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := s.decodeJobPatch(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	j, waiter, err := s.engine.Patch(id, p.apply)
	if ee, ok := err.(*engine.Error); ok && ee.Kind == engine.NotFound {
		err = s.terminalPatchError(r.Context(), id)
	}
	if err == nil {
		err = wait(r.Context(), waiter)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireJob(j, false))
}

// terminalPatchError explains why a job that is not live cannot be patched.
func (s *Server) terminalPatchError(ctx context.Context, id string) error {
	j, err := s.db.GetJob(ctx, id, s.nowMs())
	if err == store.ErrNotFound {
		return notFound("job not found")
	}
	if err != nil {
		return fmt.Errorf("get job: %w", err)
	}
	return unprocessable("cannot patch job %s in %s status", id, j.Status)
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
	ids, err := s.matching(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// One journal group: every patch commits, or none does and the request
	// answers 503. Jobs finished meanwhile, or refused, are skipped.
	patched, waiter := s.engine.PatchMany(ids, p.apply)
	if err := wait(r.Context(), waiter); err != nil {
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
	if err == nil {
		_, err = s.lookup(r.Context(), id)
	}
	if err == nil {
		err = s.db.Barrier(r.Context())
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	o := store.Asc
	if q.Order == "desc" {
		o = store.Desc
	}
	recs, more, err := s.db.ListErrors(r.Context(), id, q.From, o, q.Limit)
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
	if _, err := s.lookup(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.db.Barrier(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	rec, err := s.db.GetError(r.Context(), id, uint32(attempt))
	if err == store.ErrNotFound {
		err = notFound("error record not found")
	}
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
