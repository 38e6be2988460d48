package server

import (
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
)

func (s *Server) ack(w http.ResponseWriter, r *http.Request) {
	missing, err := s.core.Ack(r.Context(), []string{r.PathValue("id")})
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
	missing, err := s.core.Ack(r.Context(), req.IDs)
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
	if err := s.decode(w, r, &req); err != nil {
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
	j, err := s.core.Fail(r.Context(), r.PathValue("id"), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.metrics.failed(j.Status)
	s.respond(w, r, http.StatusOK, wireJob(j, false))
}
