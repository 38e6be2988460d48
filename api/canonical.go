package api

import (
	"bytes"
	"unicode/utf8"
)

// isCanonical reports whether data is already what CanonicalJSON would
// produce, so that the common payload (compact, keys sorted, plain strings
// and integers) skips a decode and re-encode on every enqueue. It answers
// false for anything it is not sure of, which then takes the general path:
// whitespace, escapes in strings, non-integers, very long integers, deep
// nesting, duplicate or unsorted keys.
func isCanonical(data []byte) bool {
	end, ok := canonicalValue(data, 0, 0)
	return ok && end == len(data)
}

const maxCanonicalDepth = 64

// canonicalValue checks the value starting at i and returns where it ends.
func canonicalValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxCanonicalDepth {
		return 0, false
	}
	switch c := b[i]; {
	case c == '{':
		return canonicalObject(b, i+1, depth+1)
	case c == '[':
		return canonicalArray(b, i+1, depth+1)
	case c == '"':
		return canonicalString(b, i+1)
	case c == '-' || (c >= '0' && c <= '9'):
		return canonicalInteger(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return 0, false
}

func canonicalObject(b []byte, i, depth int) (int, bool) {
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	var prev []byte
	for first := true; ; first = false {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		end, ok := canonicalString(b, i+1)
		if !ok {
			return 0, false
		}
		key := b[i+1 : end-1]
		// Strictly increasing byte order: sorted as Go sorts map keys,
		// and no duplicates (decoding keeps only the last).
		if !first && bytes.Compare(prev, key) >= 0 {
			return 0, false
		}
		prev = key
		if end >= len(b) || b[end] != ':' {
			return 0, false
		}
		if i, ok = canonicalValue(b, end+1, depth); !ok || i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

func canonicalArray(b []byte, i, depth int) (int, bool) {
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = canonicalValue(b, i, depth); !ok || i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// canonicalString checks a string body starting after its quote: no escapes,
// no control characters, valid UTF-8 without U+2028/U+2029 (which the
// encoder escapes). It returns the index after the closing quote.
func canonicalString(b []byte, i int) (int, bool) {
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\' || c < 0x20:
			return 0, false
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
				return 0, false
			}
			i += size
		}
	}
	return 0, false
}

// canonicalInteger accepts -?(0|[1-9][0-9]*) of at most 18 digits, which
// always fits an int64 and is written back verbatim.
func canonicalInteger(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, false
	}
	return i, true
}
