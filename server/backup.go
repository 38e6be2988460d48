package server

import (
	"net/http"
)

// backup answers POST /backup with a consistent snapshot of the store, taken
// while the server runs: 200 application/gzip, a tar.gz holding
// zizq-root/data/zizq.db (the envelope of Zizq's admin backup, docs/API.md
// §Backup and compaction), or 500 "backup failed" in plain text. One backup
// runs at a time; another answers 409. Writes go on meanwhile; the snapshot
// holds every write acknowledged before it began.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	if !s.backups.CompareAndSwap(0, 1) {
		s.writeError(w, r, http.StatusConflict, "a backup is already running")
		return
	}
	defer s.backups.Store(0)
	sent := false
	err := s.core.Backup(r.Context(), w, func() {
		sent = true
		w.Header().Set("Content-Type", "application/gzip")
		w.Header().Set("Content-Disposition", `attachment; filename="backup.tar.gz"`)
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err != nil && !sent:
		s.log.Error("backup failed", "err", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("backup failed\n"))
		return
	case err != nil:
		// The status is sent: cut the stream so the client cannot take a
		// partial archive for a whole one.
		s.log.Error("backup failed while sending", "err", err)
		panic(http.ErrAbortHandler)
	}
	s.log.Info("backup sent")
}
