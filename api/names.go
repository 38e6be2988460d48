package api

import (
	"errors"
	"math"
	"strings"
	"unicode/utf8"
)

// reservedNameChars are the characters a queue, type or budget key may not
// contain: they are kept free for glob patterns (docs/API.md §Names).
const reservedNameChars = `*?[]{}\`

// ValidateName checks a queue name, a job type or a cron name against the Zizq
// name rules (docs/API.md §Names). field names the value in the error text,
// for example "queue" gives "queue must not be empty".
func ValidateName(field, s string) error {
	if s == "" {
		return errors.New(field + " must not be empty")
	}
	if !utf8.ValidString(s) {
		// Only a path can bring one (bodies that are not UTF-8 do not
		// decode); it would be listed as U+FFFD and then not be found.
		return errors.New(field + " must be valid UTF-8")
	}
	if strings.IndexByte(s, ',') >= 0 {
		// A comma would split the name in the comma lists of query strings.
		return errors.New(field + " must not contain ','")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return errors.New(field + " must not contain null bytes")
	}
	if i := strings.IndexAny(s, reservedNameChars); i >= 0 {
		return errors.New(field + " must not contain '" + s[i:i+1] + "' (reserved)")
	}
	return nil
}

// ValidateBudgetKey checks a budget key: the rules are those of queue names
// (docs/API.md §Budget keys).
func ValidateBudgetKey(s string) error {
	return ValidateName("budget key", s)
}

// MaxTimestampMs is the latest timestamp the server takes (ready_at,
// retry_at, paused_until), in Unix milliseconds: the last that stays exact
// in nanoseconds (year 2262). Anything later is certainly a mistake.
const MaxTimestampMs = math.MaxInt64 / 1_000_000

// JobIDLen is the length of a job ID: 128 bits in lowercase base 36.
const JobIDLen = 25

// ValidJobID reports whether s has the shape of a job ID: exactly 25
// characters of [0-9a-z]. It does not check that the value fits in 128 bits,
// as Zizq does not either.
func ValidJobID(s string) bool {
	if len(s) != JobIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}
