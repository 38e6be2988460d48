package core

import (
	"context"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// showDuplicates replaces the engine's view of each job that a duplicate
// of a job there before the request names with the job as GET shows it now
// (no payload): its stored row under the engine's live fields. A duplicate
// of a job the same request created keeps that job as enqueued. The
// holder may have been enqueued moments ago by another request, so unless
// this request's own commit (created) already followed it, the store is
// first brought up to date. Should reading fail, the engine's view stands:
// the enqueue itself has succeeded.
func (s *Service) showDuplicates(ctx context.Context, jobs []engine.Enqueued, created []string) {
	here := make(map[string]bool, len(created))
	for _, id := range created {
		here[id] = true
	}
	var ids []string
	for _, j := range jobs {
		if j.Duplicate && !here[j.ID] {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	if len(created) == 0 {
		if err := s.store.Barrier(ctx); err != nil {
			s.log.Warn("show duplicates: wait for the store", "err", err)
			return
		}
	}
	rows, err := s.store.GetJobs(ctx, ids)
	if err != nil {
		s.log.Warn("show duplicates: read jobs", "err", err)
		return
	}
	stored := make(map[string]store.Job, len(rows))
	for _, r := range rows {
		r.Payload = nil
		if live, ok := s.engine.Job(r.ID); ok {
			r = overlay(r, live)
		}
		stored[r.ID] = r
	}
	for i := range jobs {
		if r, ok := stored[jobs[i].ID]; ok && jobs[i].Duplicate && !here[jobs[i].ID] {
			jobs[i].Job = r
		}
	}
}
