package server

import (
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
)

// Binding management (docs/API.md §Binding management): the single-job forms
// answer the job, the filter forms {"changed","blocked"}.
func (s *Server) bindingRoutes() {
	r := s.router
	r.handle("POST", "/jobs/{id}/budgets/{key}", s.bindOne(addBinding))
	r.handle("PUT", "/jobs/{id}/budgets/{key}", s.bindOne(putBinding))
	r.handle("PATCH", "/jobs/{id}/budgets/{key}", s.bindOne(patchBinding))
	r.handle("DELETE", "/jobs/{id}/budgets/{key}", s.bindOne(removeBinding))
	r.handle("DELETE", "/jobs/{id}/budgets", s.bindOne(removeAllBindings))
	r.handle("PUT", "/jobs/{id}/budgets", s.bindOne(replaceBindings))
	r.handle("POST", "/jobs/budgets/{key}", s.bindMany(addBinding))
	r.handle("PUT", "/jobs/budgets/{key}", s.bindMany(putBinding))
	r.handle("PATCH", "/jobs/budgets/{key}", s.bindMany(patchBinding))
	r.handle("DELETE", "/jobs/budgets/{key}", s.bindMany(removeBinding))
	r.handle("DELETE", "/jobs/budgets", s.bindMany(removeAllBindings))
}

// bindingOp reads a request's edit of job bindings; the core applies it,
// strictly to one job (an edit that does not apply is refused) or leniently
// to a filter's jobs (such a job is left alone).
type bindingOp func(s *Server, w http.ResponseWriter, r *http.Request) (core.BindingEdit, error)

func (s *Server) bindOne(op bindingOp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		edit, err := op(s, w, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		j, err := s.core.RebindOne(r.Context(), id, edit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.respond(w, r, http.StatusOK, wireJob(j, false))
	}
}

func (s *Server) bindMany(op bindingOp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, f, err := s.filter(r, false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		edit, err := op(s, w, r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		res, err := s.core.RebindJobs(r.Context(), f, edit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		blocked := res.Blocked
		if blocked == nil {
			blocked = []string{}
		}
		s.respond(w, r, http.StatusOK, api.BindingChange{Changed: res.Changed, Blocked: blocked})
	}
}

// bindingBody reads {cost?, create_with?} and validates it like an enqueue
// binding for the key in the path.
func (s *Server) bindingBody(w http.ResponseWriter, r *http.Request) (core.BindingSpec, error) {
	var req api.BindingRequest
	if err := s.decodeOptional(w, r, &req); err != nil {
		return core.BindingSpec{}, err
	}
	key := r.PathValue("key")
	req.Key = &key
	return bindingSpec(req, decodePrefix(r))
}

func addBinding(s *Server, w http.ResponseWriter, r *http.Request) (core.BindingEdit, error) {
	spec, err := s.bindingBody(w, r)
	return core.BindingEdit{Op: core.BindAdd, Binding: spec}, err
}

func putBinding(s *Server, w http.ResponseWriter, r *http.Request) (core.BindingEdit, error) {
	spec, err := s.bindingBody(w, r)
	return core.BindingEdit{Op: core.BindPut, Binding: spec}, err
}

func patchBinding(s *Server, w http.ResponseWriter, r *http.Request) (core.BindingEdit, error) {
	var req api.BindingRequest
	if err := s.decode(w, r, &req); err != nil {
		return core.BindingEdit{}, err
	}
	if req.Cost == nil {
		return core.BindingEdit{}, missing(decodePrefix(r), "cost")
	}
	if *req.Cost < 1 {
		return core.BindingEdit{}, badRequest("cost must be at least 1")
	}
	return core.BindingEdit{Op: core.BindSetCost, Binding: core.BindingSpec{Key: r.PathValue("key"), Cost: *req.Cost}}, nil
}

func removeBinding(_ *Server, _ http.ResponseWriter, r *http.Request) (core.BindingEdit, error) {
	return core.BindingEdit{Op: core.BindRemove, Binding: core.BindingSpec{Key: r.PathValue("key")}}, nil
}

func removeAllBindings(*Server, http.ResponseWriter, *http.Request) (core.BindingEdit, error) {
	return core.BindingEdit{Op: core.BindRemoveAll}, nil
}

func replaceBindings(s *Server, w http.ResponseWriter, r *http.Request) (core.BindingEdit, error) {
	var req api.BindingsReplace
	if err := s.decode(w, r, &req); err != nil {
		return core.BindingEdit{}, err
	}
	if req.Budgets == nil {
		return core.BindingEdit{}, missing(decodePrefix(r), "budgets")
	}
	specs, err := bindingSpecs(req.Budgets, decodePrefix(r))
	return core.BindingEdit{Op: core.BindReplace, Bindings: specs}, err
}
