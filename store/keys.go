package store

import (
	"encoding/json"
	"fmt"
	"maps"
)

// KeyOverride is a family's setting for one of its sub-keys (issue 26):
// Weight is its share of the family's fair turns (1..1000, 0 unset: 1),
// Allocation its sub-budget's allocation in place of the template's (0
// unset). A family's Keys holds them by sub-key, the part after
// "<family>/".
type KeyOverride struct {
	Weight     int64 `json:"weight,omitempty"`
	Allocation int64 `json:"allocation,omitempty"`
}

// EncodeKeys is the stored form of a family's Keys, a JSON object from
// sub-key to override; nil when there are none.
func EncodeKeys(k map[string]KeyOverride) *string {
	if len(k) == 0 {
		return nil
	}
	b, _ := json.Marshal(k) // strings and integers: cannot fail
	s := string(b)
	return &s
}

// DecodeKeys reads what EncodeKeys wrote; nil reads as none.
func DecodeKeys(s *string) (map[string]KeyOverride, error) {
	if s == nil || *s == "" {
		return nil, nil
	}
	var k map[string]KeyOverride
	if err := json.Unmarshal([]byte(*s), &k); err != nil {
		return nil, fmt.Errorf("decode key overrides: %w", err)
	}
	if len(k) == 0 {
		return nil, nil
	}
	return k, nil
}

// keysEqual is Budget.Equal's comparison of two families' overrides.
func keysEqual(a, b map[string]KeyOverride) bool { return maps.Equal(a, b) }
