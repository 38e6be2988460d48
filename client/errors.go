package client

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/zizq/zizq/api"
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

// StatusOf returns the HTTP status of an *Error in err's chain, or 0: the
// status of an answer that is not the Zizq API is in *NotZizqError.
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

// NotZizqError means that something answered at URL, but not the Zizq
// API: a web page, a proxy's error page, or a TLS port asked in plain HTTP.
type NotZizqError struct {
	URL string
	// Status and ContentType are those of the answer.
	Status      int
	ContentType string
	// TLS is set when the port speaks TLS and URL says http://.
	TLS bool
}

// Error names the URL and what answered there, in one line.
func (e *NotZizqError) Error() string {
	if e.TLS {
		return fmt.Sprintf("%s is a TLS port: use https://%s", e.URL, strings.TrimPrefix(e.URL, "http://"))
	}
	ct := "no content type"
	if mt, _, err := mime.ParseMediaType(e.ContentType); err == nil {
		ct = mt
	}
	return fmt.Sprintf("%s: not a zizq server (got %d %s)", e.URL, e.Status, ct)
}

// IsNotZizq reports whether what answered is not a zizq server.
func IsNotZizq(err error) bool {
	var e *NotZizqError
	return errors.As(err, &e)
}

// plainToTLS is the start of what Go's HTTP server answers a plain-HTTP
// request sent to its TLS port (net/http, "Client sent an HTTP request to
// an HTTPS server."): the one answer of a zizq TLS port that is not the
// API.
const plainToTLS = "Client sent an HTTP request to an HTTPS server"

// answerError builds the error of an answer with an error status from its
// body, whichever format it is in: a *NotZizqError when it is not an answer
// of the Zizq API, else an *Error.
func (c *Client) answerError(status int, contentType string, body []byte) error {
	f, ok := answerFormat(contentType)
	switch {
	case !ok && status == http.StatusBadRequest && strings.HasPrefix(string(body), plainToTLS):
		return &NotZizqError{URL: c.base, Status: status, ContentType: contentType, TLS: true}
	case !ok && isHTML(contentType):
		// A zizq server never answers HTML: every error body is JSON
		// (or MessagePack), and Go's own plain-text answers are not HTML.
		return &NotZizqError{URL: c.base, Status: status, ContentType: contentType}
	}
	e := &Error{Status: status}
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

// answerFormat is the format of an answer's body. Unlike a request's, an
// answer without a Content-Type is not JSON: a zizq server always names
// the format of what it sends.
func answerFormat(contentType string) (api.Format, bool) {
	if contentType == "" {
		return 0, false
	}
	return api.RequestFormat(contentType)
}

func isHTML(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}
