package server

import (
	"maps"
	"net/http"
	"slices"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
)

func (s *Server) ack(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	settles, err := s.decodeSuccess(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var missing []string
	if settles == nil {
		missing, err = s.core.Ack(r.Context(), []string{id})
	} else {
		missing, err = s.core.AckSettled(r.Context(), []string{id}, map[string][]core.Settle{id: settles})
	}
	if err == nil && len(missing) > 0 {
		err = notFound("job not found in in-flight set")
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.metrics.acked.Inc()
	noContent(w)
}

func (s *Server) ackBulk(w http.ResponseWriter, r *http.Request) {
	var req api.AckIDs
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.IDs) == 0 {
		s.fail(w, r, badRequest("ids must not be empty"))
		return
	}
	settles, err := bulkSettles(req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	missing, err := s.core.AckSettled(r.Context(), req.IDs, settles)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.metrics.acked.Add(float64(len(req.IDs) - len(missing)))
	if len(missing) > 0 {
		s.respond(w, r, http.StatusUnprocessableEntity, api.NotFound{NotFound: missing})
		return
	}
	noContent(w)
}

func (s *Server) failure(w http.ResponseWriter, r *http.Request) {
	var req api.FailureRequest
	var err error
	if err = s.decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Message == nil {
		s.fail(w, r, missing(decodePrefix(r), "message"))
		return
	}
	f := core.Failure{Message: *req.Message, Kill: req.Kill != nil && *req.Kill}
	if req.ErrorType != nil {
		f.ErrorType = *req.ErrorType
	}
	if req.Backtrace != nil {
		f.Backtrace = *req.Backtrace
	}
	if req.RetryAt != nil {
		if *req.RetryAt > maxTimestampMs {
			s.fail(w, r, badRequest("retry_at must be at most %d", int64(maxTimestampMs)))
			return
		}
		at := int64(*req.RetryAt)
		f.RetryAt = &at
	}
	if f.Budgets, err = settlesOf(req.Budgets, "budgets"); err != nil {
		s.fail(w, r, err)
		return
	}
	if f.Throttle, err = failThrottle(req.Throttle); err != nil {
		s.fail(w, r, ruleStatus(err))
		return
	}
	j, err := s.core.Fail(r.Context(), r.PathValue("id"), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.metrics.failed(j.Status)
	s.respond(w, r, http.StatusOK, wireJob(j, false))
}

// decodeSuccess reads the optional body of POST /jobs/{id}/success: none
// (Zizq's clients send none) or {"budgets": [...]}, the job's real costs
// (our extension). nil means nothing to settle.
func (s *Server) decodeSuccess(w http.ResponseWriter, r *http.Request) ([]core.Settle, error) {
	var req api.SuccessRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return nil, err
	}
	return settlesOf(req.Budgets, "budgets")
}

// bulkSettles checks the settles of a bulk success: each names a job of
// ids.
func bulkSettles(req api.AckIDs) (map[string][]core.Settle, error) {
	if len(req.Budgets) == 0 {
		return nil, nil
	}
	listed := make(map[string]bool, len(req.IDs))
	for _, id := range req.IDs {
		listed[id] = true
	}
	out := make(map[string][]core.Settle, len(req.Budgets))
	for _, id := range slices.Sorted(maps.Keys(req.Budgets)) {
		if !listed[id] {
			return nil, unprocessable("budgets.%s: job %s is not in ids", id, id)
		}
		ss, err := settlesOf(req.Budgets[id], "budgets."+id)
		if err != nil {
			return nil, err
		}
		out[id] = ss
	}
	return out, nil
}

// settlesOf checks the fields of a settle list; path names it in errors.
// The engine checks them against the job's bindings.
func settlesOf(in []api.Settle, path string) ([]core.Settle, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]core.Settle, len(in))
	for i, st := range in {
		switch {
		case st.Key == "":
			return nil, badRequest("%s[%d].key is required", path, i)
		case st.Cost == nil:
			return nil, badRequest("%s[%d].cost is required", path, i)
		case *st.Cost < 0:
			return nil, badRequest("%s[%d].cost must be at least 0", path, i)
		}
		out[i] = core.Settle{Key: st.Key, Cost: *st.Cost}
	}
	return out, nil
}
