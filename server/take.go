package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// take streams jobs to a worker (docs/API.md §Taking jobs): frames as jobs are
// dispatched, a heartbeat after each interval of silence, and on disconnect
// every job the stream still holds goes back to ready.
func (s *Server) take(w http.ResponseWriter, r *http.Request) {
	q, err := api.ParseTakeQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sf, ok := api.TakeFormat(r.Header.Get("Accept"))
	if !ok {
		s.respond(w, r, http.StatusNotAcceptable, api.Error{Error: "not acceptable", Supported: api.SupportedStreamFormats})
		return
	}
	defer s.takes.Add(-1)
	if n := s.takes.Add(1); s.cfg.MaxTakeConnections > 0 && n > int64(s.cfg.MaxTakeConnections) {
		s.writeError(w, r, http.StatusServiceUnavailable, "too many take connections: the limit is "+strconv.Itoa(s.cfg.MaxTakeConnections))
		return
	}
	if !s.isServing() { // opened while the server starts: answered, then held
		if w = s.holdTakeUntilReady(w, r, sf); w == nil {
			return
		}
	}
	// Register before answering: a client that has seen the 200 is served.
	t, err := s.core.Take(q.Queues, q.Prefetch)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer t.Close()
	w.Header().Set("Content-Type", api.StreamContentType(sf))
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if !s.writeFrames(rc, w, nil) {
		return
	}

	heartbeat := time.NewTimer(s.cfg.HeartbeatInterval)
	defer heartbeat.Stop()
	var batch []store.Job
	var buf []byte
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-t.Notify():
			if batch, err = t.Next(r.Context(), batch[:0]); err != nil {
				if !errors.Is(err, core.ErrLeaseLost) { // the lease may be gone: another leader may hand these out
					s.log.Error("read payloads of take frames", "err", err)
				}
				return // the stream ends: its jobs go back to ready
			}
			if len(batch) == 0 {
				continue
			}
			buf = buf[:0]
			for _, j := range batch {
				if buf, err = api.AppendStreamFrame(buf, sf, wireJob(j, true)); err != nil {
					s.log.Error("encode take frame", "job", j.ID, "err", err)
					return
				}
			}
			if !s.writeFrames(rc, w, buf) {
				return
			}
			heartbeat.Reset(s.cfg.HeartbeatInterval)
		case <-heartbeat.C:
			if !s.writeFrames(rc, w, api.Heartbeat(sf)) {
				return
			}
			heartbeat.Reset(s.cfg.HeartbeatInterval)
		}
	}
}

// writeFrames writes and flushes under a per-write deadline, so a reader
// that stops reading is dropped rather than holding its jobs forever.
func (s *Server) writeFrames(rc *http.ResponseController, w http.ResponseWriter, b []byte) bool {
	if s.cfg.WriteTimeout > 0 {
		if err := rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
	}
	if len(b) > 0 {
		if _, err := w.Write(b); err != nil {
			return false
		}
	}
	return rc.Flush() == nil
}
