package api

import "math"

// Most bulk enqueues look alike: {"jobs":[{"type":"…","queue":"…",
// "payload":…}, …]}, with plain strings, perhaps a priority, ready_at or
// budgets of a key and a cost, and payloads within the canonical fast
// path's rules. The reflective
// decoder spends about a microsecond on each such job; decodeBulkFast reads
// them directly. It declines anything else (another field, a null, an
// escape, a repeated name, a number it is not sure of), leaving the
// request untouched for the general decoder, whose rules then apply. When
// it accepts, its result is the general decoder's (FuzzDecodeBulkFast).

// fastScanner reads JSON tokens from b at i.
type fastScanner struct {
	b []byte
	i int
}

func (s *fastScanner) skipSpace() { s.i = skipSpace(s.b, s.i) }

// next consumes c, after any whitespace, if it comes next.
func (s *fastScanner) next(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string without escapes (canonicalString's rules)
// and returns its body.
func (s *fastScanner) plainString() ([]byte, bool) {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	end, ok := canonicalString(s.b, s.i+1)
	if !ok {
		return nil, false
	}
	body := s.b[s.i+1 : end-1]
	s.i = end
	return body, true
}

// unsigned reads 0|[1-9][0-9]* of at most 19 digits (so no overflow) up
// to limit; a fraction or exponent after it fails the caller's next token.
func (s *fastScanner) unsigned(limit uint64) (uint64, bool) {
	s.skipSpace()
	start := s.i
	var v uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = v*10 + uint64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 19 || digits > 1 && s.b[start] == '0' || v > limit {
		return 0, false
	}
	return v, true
}

// payload reads a payload value as CanonicalJSON writes it: a copy when it
// is canonical already, else reordered; null is left to the general
// decoder.
func (s *fastScanner) payload() (Payload, bool) {
	s.skipSpace()
	start := s.i
	if start >= len(s.b) || s.b[start] == 'n' {
		return nil, false
	}
	if end, ok := canonicalValue(s.b, start, 0); ok {
		s.i = end
		return append(Payload(nil), s.b[start:end]...), true
	}
	out, end, ok := reorderValue(s.b, start, 128)
	s.i = end
	return out, ok
}

// object reads an object, calling member for each name with the scanner
// at the name's value; member reads the value and reports whether it could.
func (s *fastScanner) object(member func(name []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		name, ok := s.plainString()
		if !ok || !s.next(':') || !member(name) {
			return false
		}
		if !s.next(',') {
			return s.next('}')
		}
	}
}

// array reads an array, calling element for each element (an empty array
// calls it never).
func (s *fastScanner) array(element func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !element() {
			return false
		}
		if !s.next(',') {
			return s.next(']')
		}
	}
}

// job reads one job object. A type or queue equal to the one before it
// (prevType, prevQueue: the previous job's, or nil) shares its string (the
// handlers only read them). A field already set is a repeated name, left
// to the general decoder: every value read sets its field.
func (s *fastScanner) job(prevType, prevQueue *string) (EnqueueRequest, bool) {
	var j EnqueueRequest
	ok := s.object(func(name []byte) bool {
		var ok bool
		switch {
		case string(name) == "type" && j.Type == nil:
			j.Type, ok = s.sharedString(prevType)
		case string(name) == "queue" && j.Queue == nil:
			j.Queue, ok = s.sharedString(prevQueue)
		case string(name) == "payload" && j.Payload == nil:
			j.Payload, ok = s.payload()
		case string(name) == "priority" && j.Priority == nil:
			var v uint64
			v, ok = s.unsigned(math.MaxUint16)
			j.Priority = Ptr(uint16(v))
		case string(name) == "ready_at" && j.ReadyAt == nil:
			var v uint64
			v, ok = s.unsigned(math.MaxUint64)
			j.ReadyAt = Ptr(v)
		case string(name) == "budgets" && j.Budgets == nil:
			j.Budgets, ok = s.bindings()
		}
		return ok // false too for another field
	})
	return j, ok
}

// bindings reads a job's budgets: an array of objects of a key and a
// cost (not negative); null and create_with are left to the general
// decoder.
func (s *fastScanner) bindings() ([]BindingRequest, bool) {
	out := []BindingRequest{}
	ok := s.array(func() bool {
		var b BindingRequest
		ok := s.object(func(name []byte) bool {
			var ok bool
			switch {
			case string(name) == "key" && b.Key == nil:
				b.Key, ok = s.sharedString(nil)
			case string(name) == "cost" && b.Cost == nil:
				var v uint64
				v, ok = s.unsigned(math.MaxInt64)
				b.Cost = Ptr(int64(v))
			}
			return ok
		})
		out = append(out, b)
		return ok
	})
	return out, ok
}

// sharedString reads a plain string, sharing prev when it is the same.
func (s *fastScanner) sharedString(prev *string) (*string, bool) {
	body, ok := s.plainString()
	if !ok {
		return nil, false
	}
	if prev != nil && *prev == string(body) {
		return prev, true
	}
	return Ptr(string(body)), true
}

// decodeBulkFast decodes data into out, which must be empty, when data is
// within the rules above; it reports whether it did.
func decodeBulkFast(data []byte, out *BulkEnqueueRequest) bool {
	if out.Jobs != nil {
		return false
	}
	s := fastScanner{b: data}
	if !s.next('{') {
		return false
	}
	if name, ok := s.plainString(); !ok || string(name) != "jobs" || !s.next(':') {
		return false
	}
	jobs := []EnqueueRequest{}
	var prevType, prevQueue *string
	if !s.array(func() bool {
		j, ok := s.job(prevType, prevQueue)
		jobs = append(jobs, j)
		prevType, prevQueue = j.Type, j.Queue
		return ok
	}) {
		return false
	}
	if !s.next('}') {
		return false
	}
	if s.skipSpace(); s.i != len(data) {
		return false
	}
	out.Jobs = jobs
	return true
}
