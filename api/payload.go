package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Payload is a job payload held as canonical JSON: compact, with object keys
// sorted and numbers kept verbatim. It is written as is to JSON and converted
// to native values for MessagePack.
type Payload []byte

// MarshalJSON writes the canonical JSON unchanged.
func (p Payload) MarshalJSON() ([]byte, error) {
	if len(p) == 0 {
		return []byte("null"), nil
	}
	return p, nil
}

// UnmarshalJSON canonicalises the incoming JSON value.
func (p *Payload) UnmarshalJSON(data []byte) error {
	c, err := CanonicalJSON(data)
	if err != nil {
		return err
	}
	*p = c
	return nil
}

// CanonicalJSON re-encodes a JSON value compactly with sorted object keys,
// keeping numbers exactly as written. It rejects trailing data.
func CanonicalJSON(data []byte) ([]byte, error) {
	if isCanonical(data) {
		return append([]byte(nil), data...), nil
	}
	if out, ok := reorderCanonical(data); ok {
		return out, nil
	}
	return canonicalize(data)
}

// canonicalize re-encodes any JSON value canonically (the general path).
func canonicalize(data []byte) ([]byte, error) {
	v, err := decodeJSONValue(data)
	if err != nil {
		return nil, err
	}
	return marshalCanonical(v)
}

// Value decodes the payload into plain Go values (json.Number for numbers).
func (p Payload) Value() (any, error) {
	if len(p) == 0 {
		return nil, nil
	}
	return decodeJSONValue(p)
}

func decodeJSONValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	if err := checkNumbers(v); err != nil {
		return nil, err
	}
	return v, nil
}

// checkNumbers rejects numbers no 64-bit float can hold (1e400): they could
// not be sent as MessagePack and no client could read them back.
func checkNumbers(v any) error {
	switch x := v.(type) {
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return nil
		}
		if _, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return nil
		}
		if f, err := strconv.ParseFloat(string(x), 64); err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("number %s is out of range", x)
		}
	case []any:
		for _, e := range x {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, e := range x {
			if err := checkNumbers(e); err != nil {
				return err
			}
		}
	}
	return nil
}

func marshalCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
