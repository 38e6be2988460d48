package server

import (
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/engine"
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

// bindingOp turns a request into a change of one job's bindings. strict
// says whether a job the change does not apply to is an error (single-job
// forms) or simply left alone (filter forms).
type bindingOp func(s *Server, w http.ResponseWriter, r *http.Request, strict bool) (engine.BindChange, error)

func (s *Server) bindOne(op bindingOp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		change, err := op(s, w, r, true)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		j, err := s.core.RebindOne(r.Context(), id, change)
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
		change, err := op(s, w, r, false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		res, err := s.core.RebindJobs(r.Context(), f, change)
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
func (s *Server) bindingBody(w http.ResponseWriter, r *http.Request) (engine.BindingSpec, error) {
	var req api.BindingRequest
	if r.ContentLength != 0 {
		if err := s.decode(w, r, &req); err != nil {
			return engine.BindingSpec{}, err
		}
	}
	key := r.PathValue("key")
	req.Key = &key
	return bindingSpec(req, decodePrefix(r))
}

func indexOf(cur []engine.BindingSpec, key string) int {
	for i, b := range cur {
		if b.Key == key {
			return i
		}
	}
	return -1
}

func addBinding(s *Server, w http.ResponseWriter, r *http.Request, strict bool) (engine.BindChange, error) {
	spec, err := s.bindingBody(w, r)
	if err != nil {
		return nil, err
	}
	return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
		if indexOf(cur, spec.Key) >= 0 {
			if strict {
				return nil, false, &engine.Error{Kind: engine.Conflict, Msg: "job is already bound to budget '" + spec.Key + "'", Item: -1}
			}
			return nil, false, nil
		}
		return append(cur, spec), true, nil
	}, nil
}

func putBinding(s *Server, w http.ResponseWriter, r *http.Request, _ bool) (engine.BindChange, error) {
	spec, err := s.bindingBody(w, r)
	if err != nil {
		return nil, err
	}
	return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
		if i := indexOf(cur, spec.Key); i >= 0 {
			cur[i] = spec
			return cur, true, nil
		}
		return append(cur, spec), true, nil
	}, nil
}

func patchBinding(s *Server, w http.ResponseWriter, r *http.Request, strict bool) (engine.BindChange, error) {
	var req api.BindingRequest
	if err := s.decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.Cost == nil {
		return nil, missing(decodePrefix(r), "cost")
	}
	if *req.Cost < 1 {
		return nil, badRequest("cost must be at least 1")
	}
	key, cost := r.PathValue("key"), *req.Cost
	return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
		i := indexOf(cur, key)
		if i < 0 {
			if strict {
				return nil, false, &engine.Error{Kind: engine.NotFound, Msg: "job is not bound to budget '" + key + "'", Item: -1}
			}
			return nil, false, nil
		}
		cur[i].Cost = cost
		return cur, true, nil
	}, nil
}

func removeBinding(s *Server, _ http.ResponseWriter, r *http.Request, strict bool) (engine.BindChange, error) {
	key := r.PathValue("key")
	return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
		i := indexOf(cur, key)
		if i < 0 {
			if strict {
				return nil, false, &engine.Error{Kind: engine.NotFound, Msg: "job is not bound to budget '" + key + "'", Item: -1}
			}
			return nil, false, nil
		}
		return append(cur[:i], cur[i+1:]...), true, nil
	}, nil
}

func removeAllBindings(*Server, http.ResponseWriter, *http.Request, bool) (engine.BindChange, error) {
	return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
		return nil, len(cur) > 0, nil
	}, nil
}

func replaceBindings(s *Server, w http.ResponseWriter, r *http.Request, _ bool) (engine.BindChange, error) {
	var req api.BindingsReplace
	if err := s.decode(w, r, &req); err != nil {
		return nil, err
	}
	if req.Budgets == nil {
		return nil, missing(decodePrefix(r), "budgets")
	}
	specs, err := bindingSpecs(req.Budgets, decodePrefix(r))
	if err != nil {
		return nil, err
	}
	return func([]engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
		return append([]engine.BindingSpec(nil), specs...), true, nil
	}, nil
}
