package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/core"
	"github.com/zizq/zizq/store"
)

// httpError is a refusal with a status chosen by the handler.
type httpError struct {
	status    int
	msg       string
	supported []string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func unprocessable(format string, args ...any) error {
	return &httpError{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf(format, args...)}
}

func notFound(msg string) error { return &httpError{status: http.StatusNotFound, msg: msg} }

// responseFormat is the negotiated body format; the router has already
// refused unacceptable Accept headers.
func responseFormat(r *http.Request) api.Format {
	f, ok := api.ResponseFormat(r.Header.Get("Accept"))
	if !ok {
		return api.JSON
	}
	return f
}

// respond writes v with the status in the negotiated format.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, status int, v any) {
	f := responseFormat(r)
	body, err := api.Marshal(f, v)
	if err != nil {
		s.log.Error("encode response", "path", r.URL.Path, "err", err)
		status = http.StatusInternalServerError
		f = api.JSON
		body = []byte(`{"error":"internal server error"}`)
	}
	w.Header().Set("Content-Type", api.ContentType(f))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// noContent answers 204 with no body at all (HTTP/2 clients abort on a DATA
// frame after a 204).
func noContent(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.respond(w, r, status, api.Error{Error: msg})
}

// fail maps an error to its status and writes it. This is the one place
// where errors become HTTP statuses.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		he *httpError
		de *api.DecodeError
		qe *api.QueryError
		fe *api.FieldError
		ce *core.Error
	)
	switch {
	case errors.As(err, &he):
		s.respond(w, r, he.status, api.Error{Error: he.msg, Supported: he.supported})
	case errors.As(err, &de), errors.As(err, &qe):
		s.writeError(w, r, http.StatusBadRequest, err.Error())
	case errors.As(err, &fe):
		s.writeError(w, r, http.StatusUnprocessableEntity, fe.Msg)
	case errors.As(err, &ce) && ce.Kind == core.KindStarting:
		s.notReady(w, r)
	case errors.As(err, &ce):
		switch ce.Kind {
		case core.KindUnavailable:
			s.log.Warn("storage unavailable", "path", r.URL.Path, "err", err)
		case core.KindBusy:
			w.Header().Set("Retry-After", "1")
		}
		s.writeError(w, r, coreStatus[ce.Kind], ce.Msg)
	case errors.Is(err, store.ErrUnavailable):
		s.log.Warn("storage unavailable", "path", r.URL.Path, "err", err)
		s.writeError(w, r, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		s.writeError(w, r, http.StatusServiceUnavailable, "request cancelled")
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		s.writeError(w, r, http.StatusInternalServerError, "internal server error")
	}
}

// coreStatus is the status of each kind of the core's refusals.
var coreStatus = map[core.Kind]int{
	core.KindNotFound:      http.StatusNotFound,
	core.KindConflict:      http.StatusConflict,
	core.KindUnprocessable: http.StatusUnprocessableEntity,
	core.KindInvalid:       http.StatusBadRequest,
	core.KindUnavailable:   http.StatusServiceUnavailable,
	core.KindStarting:      http.StatusServiceUnavailable,
	core.KindBusy:          http.StatusServiceUnavailable,
}

// decode reads the body into v: 415 for an unknown Content-Type, 413 past
// the size limit, 400 when it does not decode.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	f, data, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	return api.Unmarshal(f, data, v)
}

// decodeOptional decodes an optional body into v: none, or a blank one
// (what a client sends as an empty chunked body), leaves v as it is.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	f, data, err := s.readBody(w, r)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return err
	}
	return api.Unmarshal(f, data, v)
}

// readBody reads the body whole, with its format: 415 for an unknown
// Content-Type, 413 past the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (api.Format, []byte, error) {
	f, ok := api.RequestFormat(r.Header.Get("Content-Type"))
	if !ok {
		return f, nil, &httpError{status: http.StatusUnsupportedMediaType, msg: "unsupported media type", supported: api.SupportedFormats}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return f, nil, &httpError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit)}
		}
		return f, nil, badRequest("read request body: %v", err)
	}
	return f, data, nil
}
