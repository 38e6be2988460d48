package server

import (
	"encoding/json"
	"net/http"

	"github.com/zizq/zizq/server/api"
	"github.com/zizq/zizq/store"
)

// field is one member of a JSON merge patch: absent, null, or a value.
type field struct {
	set  bool
	null bool
	raw  json.RawMessage
}

func fieldOf(body map[string]json.RawMessage, name string) field {
	raw, ok := body[name]
	if !ok {
		return field{}
	}
	return field{set: true, null: string(raw) == "null", raw: raw}
}

// decodeInto decodes a present, non-null member, reporting type errors as
// decode errors (400).
func (f field) decodeInto(prefix, name string, v any) error {
	if err := json.Unmarshal(f.raw, v); err != nil {
		return badRequest("%sfield `%s`: %v", prefix, name, err)
	}
	return nil
}

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
	var body map[string]json.RawMessage
	if err := s.decode(w, r, &body); err != nil {
		return nil, err
	}
	if body == nil {
		return nil, badRequest("%sexpected an object", decodePrefix(r))
	}
	prefix := decodePrefix(r)
	p := &jobPatch{}
	if f := fieldOf(body, "queue"); f.set {
		if f.null {
			return nil, unprocessable("queue cannot be null")
		}
		var q string
		if err := f.decodeInto(prefix, "queue", &q); err != nil {
			return nil, err
		}
		if err := api.ValidateName("queue", q); err != nil {
			return nil, unprocessable("%s", err)
		}
		p.queue = &q
	}
	if f := fieldOf(body, "priority"); f.set {
		if f.null {
			return nil, unprocessable("priority cannot be null")
		}
		var v uint16
		if err := f.decodeInto(prefix, "priority", &v); err != nil {
			return nil, err
		}
		p.priority = &v
	}
	if err := p.decodeRest(body, prefix); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *jobPatch) decodeRest(body map[string]json.RawMessage, prefix string) error {
	p.readyAt = fieldOf(body, "ready_at")
	if p.readyAt.set && !p.readyAt.null {
		var v uint64
		if err := p.readyAt.decodeInto(prefix, "ready_at", &v); err != nil {
			return err
		}
		if v > maxTimestampMs {
			return unprocessable("ready_at must be at most %d", int64(maxTimestampMs))
		}
		p.readyAtVal = int64(v)
	}
	p.retryLimit = fieldOf(body, "retry_limit")
	if p.retryLimit.set && !p.retryLimit.null {
		if err := p.retryLimit.decodeInto(prefix, "retry_limit", &p.retryVal); err != nil {
			return err
		}
	}
	p.backoff = fieldOf(body, "backoff")
	if p.backoff.set && !p.backoff.null {
		var in api.BackoffRequest
		if err := p.backoff.decodeInto(prefix, "backoff", &in); err != nil {
			return err
		}
		b, err := backoff(&in, prefix)
		if err != nil {
			return err
		}
		p.backoffVal = b
	}
	p.retention = fieldOf(body, "retention")
	if p.retention.set && !p.retention.null {
		var inner map[string]json.RawMessage
		if err := p.retention.decodeInto(prefix, "retention", &inner); err != nil {
			return err
		}
		p.completed = fieldOf(inner, "completed_ms")
		p.dead = fieldOf(inner, "dead_ms")
		if p.completed.set && !p.completed.null {
			if err := p.completed.decodeInto(prefix, "completed_ms", &p.completedV); err != nil {
				return err
			}
		}
		if p.dead.set && !p.dead.null {
			if err := p.dead.decodeInto(prefix, "dead_ms", &p.deadV); err != nil {
				return err
			}
		}
	}
	return nil
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
