package core

import (
	"github.com/zizq/zizq/server/engine"
)

// BindingOp names an edit of a job's budget bindings.
type BindingOp uint8

const (
	// BindAdd binds the job to Binding; a job already bound to its key is
	// a conflict (one job) or left alone (a filter's jobs).
	BindAdd BindingOp = iota + 1
	// BindPut binds the job to Binding, replacing its binding to the key
	// if it has one.
	BindPut
	// BindSetCost sets the cost of the job's binding to Binding.Key to
	// Binding.Cost; a job not bound to the key is not found (one job) or
	// left alone.
	BindSetCost
	// BindRemove unbinds the job from Binding.Key; a job not bound to the
	// key is not found (one job) or left alone.
	BindRemove
	// BindRemoveAll unbinds the job from every budget.
	BindRemoveAll
	// BindReplace makes Bindings the job's bindings.
	BindReplace
)

// BindingEdit is a change of a job's budget bindings, as RebindOne and
// RebindJobs apply it: Binding for the edits of one key, Bindings for
// BindReplace.
type BindingEdit struct {
	Op       BindingOp
	Binding  BindingSpec
	Bindings []BindingSpec
}

// change is the edit as the engine applies it to each job. strict says
// whether a job the edit does not apply to is an error (one job named) or
// simply left alone (the jobs a filter selects).
func (ed BindingEdit) change(strict bool) (engine.BindChange, error) {
	spec := engine.BindingSpec(ed.Binding)
	key := spec.Key
	// skip is the answer for a job the edit does not apply to.
	skip := func(kind Kind, format string) ([]engine.BindingSpec, bool, error) {
		if strict {
			return nil, false, refuse(kind, format, key)
		}
		return nil, false, nil
	}
	switch ed.Op {
	case BindAdd:
		return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
			if indexOf(cur, key) >= 0 {
				return skip(KindConflict, "job is already bound to budget '%s'")
			}
			return append(cur, spec), true, nil
		}, nil
	case BindPut:
		return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
			if i := indexOf(cur, key); i >= 0 {
				cur[i] = spec
				return cur, true, nil
			}
			return append(cur, spec), true, nil
		}, nil
	case BindSetCost:
		return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
			i := indexOf(cur, key)
			if i < 0 {
				return skip(KindNotFound, "job is not bound to budget '%s'")
			}
			cur[i].Cost = spec.Cost
			return cur, true, nil
		}, nil
	case BindRemove:
		return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
			i := indexOf(cur, key)
			if i < 0 {
				return skip(KindNotFound, "job is not bound to budget '%s'")
			}
			return append(cur[:i], cur[i+1:]...), true, nil
		}, nil
	case BindRemoveAll:
		return func(cur []engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
			return nil, len(cur) > 0, nil
		}, nil
	case BindReplace:
		specs := engineBindings(ed.Bindings)
		return func([]engine.BindingSpec) ([]engine.BindingSpec, bool, error) {
			return append([]engine.BindingSpec(nil), specs...), true, nil
		}, nil
	}
	return nil, Invalid("unknown binding edit %d", ed.Op)
}

func indexOf(cur []engine.BindingSpec, key string) int {
	for i, b := range cur {
		if b.Key == key {
			return i
		}
	}
	return -1
}
