package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store"
)

// patchObject is one object of a JSON merge patch: its members by exact
// name, and where it sits, for error texts.
type patchObject struct {
	prefix  string // "invalid JSON: " or "invalid MessagePack: "
	path    string // "" for the body, "strategy." for a member object
	members map[string]json.RawMessage
}

// decodePatch reads a merge patch body, which must be an object whose
// members are all among known (422 naming the first other one).
func (s *Server) decodePatch(w http.ResponseWriter, r *http.Request, known ...string) (patchObject, error) {
	prefix := decodePrefix(r)
	var raw json.RawMessage
	if err := s.decode(w, r, &raw); err != nil {
		return patchObject{}, err
	}
	o := patchObject{prefix: prefix}
	if !isObject(raw) {
		what := "a JSON object"
		if prefix != "invalid JSON: " {
			what = "a map"
		}
		return patchObject{}, badRequest("%sbody must be %s", prefix, what)
	}
	// Members of a valid object: this cannot fail.
	if err := json.Unmarshal(raw, &o.members); err != nil {
		return patchObject{}, badRequest("%s%v", prefix, err)
	}
	return o, o.only(known...)
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// only refuses members not among known.
func (o patchObject) only(known ...string) error {
	var unknown []string
	for name := range o.members {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return unprocessable("unknown field %q", o.path+unknown[0])
}

// field is one member of a merge patch: absent, null, or a value.
type field struct {
	name   string // with its path: "strategy.type"
	prefix string
	set    bool
	null   bool
	raw    json.RawMessage
}

func (o patchObject) field(name string) field {
	f := field{name: o.path + name, prefix: o.prefix}
	if raw, ok := o.members[name]; ok {
		f.set, f.null, f.raw = true, string(raw) == "null", raw
	}
	return f
}

// notNull refuses null for a member that cannot be removed.
func (f field) notNull() error {
	if f.null {
		return unprocessable("%s cannot be null", f.name)
	}
	return nil
}

// decodeAs decodes a present, non-null member into v; a value of the wrong
// JSON type is a decode error (400) saying what the member must be.
func (f field) decodeAs(v any, want string) error {
	if err := json.Unmarshal(f.raw, v); err != nil {
		return badRequest("%s%s must be %s", f.prefix, f.name, want)
	}
	return nil
}

// object reads a present, non-null member that is itself an object whose
// members are all among known.
func (f field) object(known ...string) (patchObject, error) {
	o := patchObject{prefix: f.prefix, path: f.name + "."}
	if !isObject(f.raw) {
		return o, badRequest("%s%s must be an object", f.prefix, f.name)
	}
	if err := json.Unmarshal(f.raw, &o.members); err != nil {
		return o, badRequest("%s%s must be an object", f.prefix, f.name)
	}
	return o, o.only(known...)
}

// What patch members must be, in their type errors.
const (
	wantString  = "a string"
	wantInteger = "an integer"
	wantNonNeg  = "a non-negative integer"
	wantUint16  = "an integer 0..65535"
	wantUint32  = "an integer 0..4294967295"
	wantNumber  = "a number"
)

// jobPatch is a validated PATCH /jobs body (API.md §8.3).
type jobPatch struct {
	queue      *string
	priority   *uint16
	readyAt    field
	readyAtVal int64
	retryLimit field
	retryVal   uint32
	backoff    field
	backoffVal *store.Backoff
	retention  field
	completed  field
	dead       field
	completedV uint64
	deadV      uint64
}

func (s *Server) decodeJobPatch(w http.ResponseWriter, r *http.Request) (*jobPatch, error) {
	// type, payload and budgets are fields of a job that PATCH cannot
	// change: ignored (API.md §8.3), so that a job as read can be sent back.
	body, err := s.decodePatch(w, r, "queue", "priority", "ready_at", "retry_limit", "backoff", "retention",
		"type", "payload", "budgets")
	if err != nil {
		return nil, err
	}
	p := &jobPatch{}
	if f := body.field("queue"); f.set {
		var q string
		if err := f.notNull(); err != nil {
			return nil, err
		}
		if err := f.decodeAs(&q, wantString); err != nil {
			return nil, err
		}
		if err := api.ValidateName("queue", q); err != nil {
			return nil, unprocessable("%s", err)
		}
		p.queue = &q
	}
	if f := body.field("priority"); f.set {
		var v uint16
		if err := f.notNull(); err != nil {
			return nil, err
		}
		if err := f.decodeAs(&v, wantUint16); err != nil {
			return nil, err
		}
		p.priority = &v
	}
	if err := p.decodeRest(body); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *jobPatch) decodeRest(body patchObject) error {
	p.readyAt = body.field("ready_at")
	if p.readyAt.set && !p.readyAt.null {
		var v uint64
		if err := p.readyAt.decodeAs(&v, wantNonNeg); err != nil {
			return err
		}
		if v > maxTimestampMs {
			return unprocessable("ready_at must be at most %d", int64(maxTimestampMs))
		}
		p.readyAtVal = int64(v)
	}
	p.retryLimit = body.field("retry_limit")
	if p.retryLimit.set && !p.retryLimit.null {
		if err := p.retryLimit.decodeAs(&p.retryVal, wantUint32); err != nil {
			return err
		}
	}
	p.backoff = body.field("backoff")
	if p.backoff.set && !p.backoff.null {
		b, err := decodeBackoffPatch(p.backoff)
		if err != nil {
			return err
		}
		p.backoffVal = b
	}
	p.retention = body.field("retention")
	if p.retention.set && !p.retention.null {
		inner, err := p.retention.object("completed_ms", "dead_ms")
		if err != nil {
			return err
		}
		p.completed = inner.field("completed_ms")
		p.dead = inner.field("dead_ms")
		if p.completed.set && !p.completed.null {
			if err := p.completed.decodeAs(&p.completedV, wantNonNeg); err != nil {
				return err
			}
		}
		if p.dead.set && !p.dead.null {
			if err := p.dead.decodeAs(&p.deadV, wantNonNeg); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeBackoffPatch reads a backoff member: all three fields, as on
// enqueue.
func decodeBackoffPatch(f field) (*store.Backoff, error) {
	inner, err := f.object("exponent", "base_ms", "jitter_ms")
	if err != nil {
		return nil, err
	}
	var in api.BackoffRequest
	for _, m := range []struct {
		name, want string
		v          any
	}{{"exponent", wantNumber, &in.Exponent}, {"base_ms", wantUint32, &in.BaseMs}, {"jitter_ms", wantUint32, &in.JitterMs}} {
		if g := inner.field(m.name); g.set {
			if err := g.decodeAs(m.v, m.want); err != nil {
				return nil, err
			}
		}
	}
	return backoff(&in, f.prefix)
}

// apply edits a copy of a live job; it runs under the engine lock.
func (p *jobPatch) apply(now int64, j *store.Job) error {
	if p.queue != nil {
		j.Queue = *p.queue
	}
	if p.priority != nil {
		j.Priority = *p.priority
	}
	switch {
	case p.readyAt.null:
		if j.Status == store.Scheduled {
			j.ReadyAt = now
		}
	case p.readyAt.set:
		j.ReadyAt = p.readyAtVal
	}
	switch {
	case p.retryLimit.null:
		j.RetryLimit = nil
	case p.retryLimit.set:
		v := p.retryVal
		j.RetryLimit = &v
	}
	switch {
	case p.backoff.null:
		j.Backoff = nil
	case p.backoff.set:
		b := *p.backoffVal
		j.Backoff = &b
	}
	p.applyRetention(j)
	return nil
}

func (p *jobPatch) applyRetention(j *store.Job) {
	if p.retention.null {
		j.Retention = nil
		return
	}
	if !p.retention.set {
		return
	}
	var ret store.Retention
	if j.Retention != nil {
		ret = *j.Retention
	}
	switch {
	case p.completed.null:
		ret.CompletedMs = nil
	case p.completed.set:
		v := p.completedV
		ret.CompletedMs = &v
	}
	switch {
	case p.dead.null:
		ret.DeadMs = nil
	case p.dead.set:
		v := p.deadV
		ret.DeadMs = &v
	}
	j.Retention = &ret
	if ret.CompletedMs == nil && ret.DeadMs == nil {
		j.Retention = nil
	}
}
