package server

import (
	"net/http"
	"runtime/debug"
)

// recoverPanic, deferred around every handler, turns a panic into a logged
// error and a 500 JSON answer. net/http would only log it to its error log
// and drop the connection, so the client would see an EOF and the bug could
// go unnoticed. A handler's deliberate http.ErrAbortHandler still aborts.
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	s.writeError(w, r, http.StatusInternalServerError, "internal server error")
}
