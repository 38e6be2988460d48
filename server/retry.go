package server

import (
	"fmt"
	"net/http"

	"github.com/zizq/zizq/store"
)

// retry answers POST /jobs/{id}/retry (our extension): a dead job runs
// again. It becomes ready now with its attempts, error history, overrides
// and budget bindings kept; its purge is cancelled. 200 with the job
// (without payload); 404 when there is no such job; 422 when it is not
// dead, or a budget it is bound to is gone. Since attempts are kept, a
// retried job that fails again without retry_at dies again at once unless
// its retry_limit is raised (PATCH it after the retry).
func (s *Server) retry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.lookup(r.Context(), id)
	if err == nil {
		j, err = s.readmit(r, j)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.respond(w, r, http.StatusOK, wireJob(j, false))
}

func (s *Server) readmit(r *http.Request, dead store.Job) (store.Job, error) {
	if dead.Status != store.Dead {
		return store.Job{}, unprocessable("job %s is not dead: it is %s", dead.ID, dead.Status)
	}
	j, waiter, err := s.engine.Readmit(dead)
	if err != nil {
		return store.Job{}, err
	}
	if err := wait(r.Context(), waiter); err != nil {
		return store.Job{}, err
	}
	// The row could have been deleted between our read and the readmission
	// (DELETE /jobs/{id} does not cancel purges): then the update found
	// nothing, and the engine must drop its copy.
	if _, err := s.db.GetJob(r.Context(), j.ID, 0); err == store.ErrNotFound {
		_, waiter := s.engine.Delete([]string{j.ID})
		_ = wait(r.Context(), waiter)
		return store.Job{}, notFound("job not found")
	} else if err != nil {
		return store.Job{}, fmt.Errorf("get job: %w", err)
	}
	return j, nil
}
