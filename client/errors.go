package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/zizq/zizq/server/api"
)

// Error is an error answer of the server: its HTTP status and the message
// of its {"error": …} body. NotFound holds the IDs of a bulk ack's
// {"not_found": […]} answer.
type Error struct {
	Status   int
	Message  string
	NotFound []string
}

// Error returns the server's message.
func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("server answered %d %s", e.Status, http.StatusText(e.Status))
}

// UnreachableError means no answer came back from the server at URL: the
// connection failed, or the request timed out.
type UnreachableError struct {
	URL string
	Err error
}

// Error names the URL tried and the cause.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach zizq server at %s: %v", e.URL, e.Err)
}

// Unwrap returns the network error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// StatusOf returns the HTTP status of an *Error in err's chain, or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether the server answered 404.
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict reports whether the server answered 409 (e.g. a budget that
// exists already, or one that unfinished jobs still use).
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// IsValidation reports whether the server refused the request as invalid:
// 400 (malformed) or 422 (against the rules or the server's state).
func IsValidation(err error) bool {
	s := StatusOf(err)
	return s == http.StatusBadRequest || s == http.StatusUnprocessableEntity
}

// IsUnreachable reports whether no answer came back from the server.
func IsUnreachable(err error) bool {
	var e *UnreachableError
	return errors.As(err, &e)
}

// responseError builds the *Error of an error answer from its body,
// whichever format it is in.
func responseError(status int, contentType string, body []byte) *Error {
	e := &Error{Status: status}
	f, ok := api.RequestFormat(contentType)
	if ok && len(body) > 0 {
		var eb api.Error
		if api.Unmarshal(f, body, &eb) == nil && eb.Error != "" {
			e.Message = eb.Error
			return e
		}
		var nf api.NotFound
		if api.Unmarshal(f, body, &nf) == nil && nf.NotFound != nil {
			e.NotFound = nf.NotFound
			e.Message = "not found in the in-flight set: " + strings.Join(nf.NotFound, ", ")
			return e
		}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	e.Message = fmt.Sprintf("server answered %d %s", status, http.StatusText(status))
	if text != "" && !ok {
		e.Message += ": " + text
	}
	return e
}
