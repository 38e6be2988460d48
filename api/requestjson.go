package api

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// appendBulkEnqueueJSON appends a bulk enqueue's body as the general
// encoder writes it, for the requests of type, queue, payload, priority
// and bindings of a key and a cost that producers send in bulk; a
// producer's encoding of a bulk of 1,000 otherwise costs about 2 us a job,
// reflectively. It answers false, appending nothing, when any request
// declines (see appendEnqueueJSON), and the caller then takes the general
// encoder.
func appendBulkEnqueueJSON(dst []byte, b *BulkEnqueueRequest) ([]byte, bool) {
	if b.Jobs == nil {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, `{"jobs":[`...)
	for i := range b.Jobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendEnqueueJSON(dst, &b.Jobs[i]); !ok {
			return dst[:start], false
		}
	}
	return append(dst, "]}"...), true
}

// appendEnqueueJSON appends r in the struct's field order, as the general
// encoder does. It declines a request with any other field set, a string
// that needs escaping, a binding without its key or cost or with a
// create_with, and a payload that is not compact valid JSON (which the
// general encoder compacts, or refuses).
func appendEnqueueJSON(dst []byte, r *EnqueueRequest) ([]byte, bool) {
	if r.ReadyAt != nil || r.RetryLimit != nil || r.Backoff != nil || r.Retention != nil || r.UniqueKey != nil ||
		r.UniqueWhile != nil || r.Batch != nil || r.StartBy != nil || r.StartWithinMs != nil ||
		r.Type != nil && !plainJSON(*r.Type) || r.Queue != nil && !plainJSON(*r.Queue) ||
		len(r.Payload) > 0 && !compactJSON(r.Payload) {
		return dst, false
	}
	for _, b := range r.Budgets {
		if b.Key == nil || b.Cost == nil || b.CreateWith != nil || !plainJSON(*b.Key) {
			return dst, false
		}
	}
	dst = append(dst, '{')
	sep := func(name string) {
		if dst[len(dst)-1] != '{' {
			dst = append(dst, ',')
		}
		dst = append(dst, name...)
	}
	if r.Type != nil {
		sep(`"type":`)
		dst = appendField(dst, "", *r.Type)
	}
	if r.Queue != nil {
		sep(`"queue":`)
		dst = appendField(dst, "", *r.Queue)
	}
	if len(r.Payload) > 0 {
		sep(`"payload":`)
		dst = append(dst, r.Payload...)
	}
	if r.Priority != nil {
		sep(`"priority":`)
		dst = strconv.AppendUint(dst, uint64(*r.Priority), 10)
	}
	if len(r.Budgets) > 0 {
		sep(`"budgets":[`)
		for i, b := range r.Budgets {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendField(dst, `{"key":`, *b.Key)
			dst = strconv.AppendInt(append(dst, `,"cost":`...), *b.Cost, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), true
}

// compactJSON reports whether p is valid JSON without whitespace outside
// its strings: what the general encoder writes of a payload as it is.
func compactJSON(p []byte) bool {
	inString, escaped := false, false
	for _, c := range p {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\n' || c == '\r' || c == '\t'):
			return false
		}
	}
	return jsontext.Value(p).IsValid()
}
