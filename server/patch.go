package server

import (
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/store"
)

// jobPatch is a PATCH /jobs body (docs/API.md §Patching jobs), decoded by
// package api and checked against the server's rules.
type jobPatch struct {
	api.JobPatch
	backoff *store.Backoff // the value of Backoff, when it sets one
}

func (s *Server) decodeJobPatch(w http.ResponseWriter, r *http.Request) (*jobPatch, error) {
	f, data, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	body, err := api.DecodeJobPatch(f, data)
	if err != nil {
		return nil, err
	}
	p := &jobPatch{JobPatch: body}
	if p.Queue != nil {
		if err := api.ValidateName("queue", *p.Queue); err != nil {
			return nil, unprocessable("%s", err)
		}
	}
	if at, ok := p.ReadyAt.Get(); ok && at > maxTimestampMs {
		return nil, unprocessable("ready_at must be at most %d", int64(maxTimestampMs))
	}
	if b, ok := p.Backoff.Get(); ok {
		if p.backoff, err = checkBackoff(b); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// apply edits a copy of a live job; it runs under the engine lock.
func (p *jobPatch) apply(now int64, j *store.Job) error {
	if p.Queue != nil {
		j.Queue = *p.Queue
	}
	if p.Priority != nil {
		j.Priority = *p.Priority
	}
	if at, ok := p.ReadyAt.Get(); ok {
		j.ReadyAt = int64(at)
	} else if p.ReadyAt.IsNull() && j.Status == store.Scheduled {
		j.ReadyAt = now
	}
	j.RetryLimit = p.RetryLimit.Merge(j.RetryLimit)
	switch {
	case p.Backoff.IsNull():
		j.Backoff = nil
	case p.backoff != nil:
		b := *p.backoff
		j.Backoff = &b
	}
	p.applyRetention(j)
	return nil
}

func (p *jobPatch) applyRetention(j *store.Job) {
	if p.Retention.IsNull() {
		j.Retention = nil
		return
	}
	r, ok := p.Retention.Get()
	if !ok {
		return
	}
	var ret store.Retention
	if j.Retention != nil {
		ret = *j.Retention
	}
	ret.CompletedMs = r.CompletedMs.Merge(ret.CompletedMs)
	ret.DeadMs = r.DeadMs.Merge(ret.DeadMs)
	j.Retention = &ret
	if ret.CompletedMs == nil && ret.DeadMs == nil {
		j.Retention = nil
	}
}
