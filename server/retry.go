package server

import "net/http"

// retry answers POST /jobs/{id}/retry (our extension): a dead job runs
// again. It becomes ready now with its attempts, error history, overrides
// and budget bindings kept; its purge is cancelled. 200 with the job
// (without payload); 404 when there is no such job; 422 when it is not
// dead, or a budget it is bound to is gone. Since attempts are kept, a
// retried job that fails again without retry_at dies again at once unless
// its retry_limit is raised (PATCH it after the retry).
func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	j, err := s.core.Retry(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireJob(j, false))
}
