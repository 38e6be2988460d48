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

func (s *fastScanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

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
	var few [16]copiedMember
	r := reorderer{b: s.b, out: make([]byte, 0, 2*bytesToEnd(s.b, start)), members: few[:0]}
	end, ok := r.value(start, 0)
	if !ok {
		return nil, false
	}
	s.i = end
	return r.out, true
}

// bytesToEnd bounds a reordered payload's size for its first allocation.
func bytesToEnd(b []byte, i int) int { return min(len(b)-i, 256) }

// fields a fast job may hold, as bits of the names seen.
const (
	fastType = 1 << iota
	fastQueue
	fastPayload
	fastPriority
	fastReadyAt
	fastBudgets
)

// job reads one job object. A type or queue equal to prev's shares its
// string (the handlers only read them).
func (s *fastScanner) job(prev *EnqueueRequest) (EnqueueRequest, bool) {
	var j EnqueueRequest
	if !s.next('{') {
		return j, false
	}
	if s.next('}') {
		return j, true
	}
	seen := 0
	for {
		name, ok := s.plainString()
		if !ok || !s.next(':') {
			return j, false
		}
		var field int
		switch string(name) {
		case "type":
			field = fastType
			j.Type, ok = s.sharedString(prev.Type)
		case "queue":
			field = fastQueue
			j.Queue, ok = s.sharedString(prev.Queue)
		case "payload":
			field = fastPayload
			j.Payload, ok = s.payload()
		case "priority":
			field = fastPriority
			var v uint64
			v, ok = s.unsigned(math.MaxUint16)
			j.Priority = Ptr(uint16(v))
		case "ready_at":
			field = fastReadyAt
			var v uint64
			v, ok = s.unsigned(math.MaxUint64)
			j.ReadyAt = Ptr(v)
		case "budgets":
			field = fastBudgets
			j.Budgets, ok = s.bindings()
		default:
			return j, false
		}
		if !ok || seen&field != 0 {
			return j, false
		}
		seen |= field
		if s.next(',') {
			continue
		}
		return j, s.next('}')
	}
}

// bindings reads a job's budgets: an array of objects of a key and a
// cost (not negative); null and create_with are left to the general
// decoder.
func (s *fastScanner) bindings() ([]BindingRequest, bool) {
	if !s.next('[') {
		return nil, false
	}
	out := []BindingRequest{}
	if s.next(']') {
		return out, true
	}
	for {
		b, ok := s.binding()
		if !ok {
			return nil, false
		}
		out = append(out, b)
		if s.next(',') {
			continue
		}
		return out, s.next(']')
	}
}

func (s *fastScanner) binding() (BindingRequest, bool) {
	var b BindingRequest
	if !s.next('{') {
		return b, false
	}
	if s.next('}') {
		return b, true
	}
	for {
		name, ok := s.plainString()
		if !ok || !s.next(':') {
			return b, false
		}
		switch {
		case string(name) == "key" && b.Key == nil:
			b.Key, ok = s.sharedString(nil)
		case string(name) == "cost" && b.Cost == nil:
			var v uint64
			v, ok = s.unsigned(math.MaxInt64)
			b.Cost = Ptr(int64(v))
		default: // another field, or one repeated
			return b, false
		}
		if !ok {
			return b, false
		}
		if s.next(',') {
			continue
		}
		return b, s.next('}')
	}
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
	if name, ok := s.plainString(); !ok || string(name) != "jobs" || !s.next(':') || !s.next('[') {
		return false
	}
	jobs := []EnqueueRequest{}
	if !s.next(']') {
		prev := &EnqueueRequest{}
		for {
			j, ok := s.job(prev)
			if !ok {
				return false
			}
			jobs = append(jobs, j)
			prev = &jobs[len(jobs)-1]
			if s.next(',') {
				continue
			}
			if s.next(']') {
				break
			}
			return false
		}
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
