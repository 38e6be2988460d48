package api

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	return v, nil
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
