package api

import (
	"bytes"
	"slices"
)

// Most payloads that are not canonical only have their keys out of order
// or some whitespace: a client serialises an object in its field order
// ({"user_id":1,"email":"…"}). reorderCanonical canonicalises those
// without decoding them into Go values: it checks each token with the
// fast path's own rules (plain strings, short integers), drops the
// whitespace and sorts each object's members by key. Anything else
// (escapes, non-integers, duplicate keys, deep nesting) answers false and
// takes the general path.

// copiedMember is one object member written to the output: out[start:end],
// whose key is out[start+1 : start+1+keyLen].
type copiedMember struct {
	start, end, keyLen int
}

// reorderCanonical returns what CanonicalJSON returns for data, if data
// is within the rules above.
func reorderCanonical(data []byte) ([]byte, bool) {
	out, end, ok := reorderValue(data, skipSpace(data, 0), len(data))
	if !ok || skipSpace(data, end) != len(data) {
		return nil, false
	}
	return out, true
}

// reorderValue returns what CanonicalJSON returns for the value at b[i:]
// (no whitespace before it) and the index after it, if the value is
// within the rules above; size is a guess of its length.
func reorderValue(b []byte, i, size int) ([]byte, int, bool) {
	var few [16]copiedMember // most payloads need no other array of members
	r := reorderer{b: b, out: make([]byte, 0, size), members: few[:0]}
	end, ok := r.value(i, 0)
	return r.out, end, ok
}

type reorderer struct {
	b       []byte
	out     []byte
	members []copiedMember // scratch, a stack shared by nested objects
	scratch []byte
}

// skip returns the index of the first non-whitespace byte from i.
func (r *reorderer) skip(i int) int { return skipSpace(r.b, i) }

// value copies the value at i (no whitespace before it) and returns the
// index after it.
func (r *reorderer) value(i, depth int) (int, bool) {
	if i >= len(r.b) || depth > maxCanonicalDepth {
		return 0, false
	}
	var end int
	var ok bool
	switch c := r.b[i]; {
	case c == '{':
		return r.object(i+1, depth+1)
	case c == '[':
		return r.array(i+1, depth+1)
	case c == '"':
		end, ok = canonicalString(r.b, i+1)
	case c == '-' || (c >= '0' && c <= '9'):
		end, ok = canonicalInteger(r.b, i)
	default:
		end, ok = canonicalValue(r.b, i, depth) // true, false, null
	}
	if !ok {
		return 0, false
	}
	r.out = append(r.out, r.b[i:end]...)
	return end, true
}

func (r *reorderer) array(i, depth int) (int, bool) {
	return r.elements(i, '[', ']', func(i int) (int, bool) { return r.value(i, depth) }, nil)
}

func (r *reorderer) object(i, depth int) (int, bool) {
	base := len(r.members)
	defer func() { r.members = r.members[:base] }()
	return r.elements(i, '{', '}', func(i int) (int, bool) { return r.member(i, depth) },
		func() bool { return r.sortMembers(base) })
}

// elements copies the elements of an array or object whose body starts at
// i, each by one, with commas between them, and returns the index after
// the closing byte. done, when set, runs before the close is written.
func (r *reorderer) elements(i int, open, close byte, one func(int) (int, bool), done func() bool) (int, bool) {
	r.out = append(r.out, open)
	i = r.skip(i)
	if i < len(r.b) && r.b[i] == close {
		r.out = append(r.out, close)
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = one(i); !ok {
			return 0, false
		}
		i = r.skip(i)
		if i >= len(r.b) {
			return 0, false
		}
		switch r.b[i] {
		case ',':
			r.out = append(r.out, ',')
			i = r.skip(i + 1)
		case close:
			if done != nil && !done() {
				return 0, false
			}
			r.out = append(r.out, close)
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// member copies "key":value at i and records it.
func (r *reorderer) member(i, depth int) (int, bool) {
	if i >= len(r.b) || r.b[i] != '"' {
		return 0, false
	}
	end, ok := canonicalString(r.b, i+1)
	if !ok {
		return 0, false
	}
	start, keyLen := len(r.out), end-i-2
	r.out = append(r.out, r.b[i:end]...)
	r.out = append(r.out, ':')
	i = r.skip(end)
	if i >= len(r.b) || r.b[i] != ':' {
		return 0, false
	}
	if i, ok = r.value(r.skip(i+1), depth); !ok {
		return 0, false
	}
	r.members = append(r.members, copiedMember{start: start, end: len(r.out), keyLen: keyLen})
	return i, true
}

// sortMembers puts the object's members (from base on the stack, commas
// between them in out) in key order; false on a duplicate key, which
// decoding would collapse to its last value.
func (r *reorderer) sortMembers(base int) bool {
	ms := r.members[base:]
	key := func(m copiedMember) []byte { return r.out[m.start+1 : m.start+1+m.keyLen] }
	sorted := true
	for k := 1; k < len(ms); k++ {
		switch c := bytes.Compare(key(ms[k-1]), key(ms[k])); {
		case c == 0:
			return false
		case c > 0:
			sorted = false
		}
	}
	if sorted {
		return true
	}
	// The members are sorted where they are on the stack: object pops
	// them once this returns, and their offsets are read from scratch.
	from := ms[0].start
	r.scratch = append(r.scratch[:0], r.out[from:]...)
	slices.SortFunc(ms, func(a, b copiedMember) int { return bytes.Compare(key(a), key(b)) })
	for k := 1; k < len(ms); k++ {
		if bytes.Equal(key(ms[k-1]), key(ms[k])) {
			return false
		}
	}
	r.out = r.out[:from]
	for k, m := range ms {
		if k > 0 {
			r.out = append(r.out, ',')
		}
		r.out = append(r.out, r.scratch[m.start-from:m.end-from]...)
	}
	return true
}
