// Package bindtext is the one stored text form of a job's budget bindings,
// [{"key":…,"cost":…},…], which both stores keep (SQL filters on it with
// json_each or json_array_elements, and a backup copies it as it is).
package bindtext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/zizq/zizq/store"
)

// A Load reads one text for most jobs of a backlog, so Decode reads the
// form Encode writes by hand, and hands anything else (escaped keys, older
// rows) to the JSON decoder.

// binding is the stored JSON form of a Binding.
type binding struct {
	Key  string `json:"key"`
	Cost int64  `json:"cost"`
}

// Encode returns bindings' stored text.
func Encode(bs []store.Binding) string {
	out := make([]binding, len(bs))
	for i, b := range bs {
		out[i] = binding(b)
	}
	// Invalid UTF-8 (which the API lets through to no key) becomes U+FFFD,
	// as it did with encoding/json; so this cannot fail.
	buf, _ := jsonv2.Marshal(out, jsontext.AllowInvalidUTF8(true))
	return string(buf)
}

// Decode reads a stored text.
func Decode(s string) ([]store.Binding, error) {
	if bs, ok := parseFast(s); ok {
		return bs, nil
	}
	var in []binding
	if err := jsonv2.Unmarshal([]byte(s), &in); err != nil {
		return nil, fmt.Errorf("decode job budgets: %w", err)
	}
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]store.Binding, len(in))
	for i, b := range in {
		out[i] = store.Binding(b)
	}
	return out, nil
}

// parseBindings reads s if it is exactly in Encode' form with no
// escape in a key; ok is false otherwise. Keys are substrings of s.
func parseFast(s string) (bs []store.Binding, ok bool) {
	const keyOpen, costOpen = `{"key":"`, `","cost":`
	rest, found := strings.CutPrefix(s, "[")
	if !found {
		return nil, false
	}
	bs = make([]store.Binding, 0, 1+strings.Count(s, "},{"))
	for {
		if rest, found = strings.CutPrefix(rest, keyOpen); !found {
			return nil, false
		}
		end := strings.IndexByte(rest, '"')
		if end < 0 || !plainKey(rest[:end]) || !strings.HasPrefix(rest[end:], costOpen) {
			return nil, false
		}
		key := rest[:end]
		rest = rest[end+len(costOpen):]
		end = strings.IndexByte(rest, '}')
		if end < 0 {
			return nil, false
		}
		cost, err := strconv.ParseInt(rest[:end], 10, 64)
		if err != nil || strconv.FormatInt(cost, 10) != rest[:end] { // JSON's spelling only
			return nil, false
		}
		bs = append(bs, store.Binding{Key: key, Cost: cost})
		rest = rest[end+1:]
		if rest == "]" {
			return bs, len(bs) > 0
		}
		if rest, found = strings.CutPrefix(rest, ","); !found {
			return nil, false
		}
	}
}

// plainKey reports whether k stands for itself inside JSON quotes: valid
// UTF-8 with no escape and no control character.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] == '\\' {
			return false
		}
	}
	return utf8.ValidString(k)
}

// Cache holds the bindings decoded from each text met so far, for a
// store's Load: a backlog binds most of its jobs alike, and decoding the
// same text again would cost more than the rest of the row. The jobs of
// one text share its slice, which nobody changes.
type Cache map[string][]store.Binding

const cacheMax = 4096

// Decode reads text through the cache.
func (c Cache) Decode(text string) ([]store.Binding, error) {
	if b, ok := c[text]; ok {
		return b, nil
	}
	b, err := Decode(text)
	if err != nil {
		return nil, err
	}
	if len(c) < cacheMax {
		c[strings.Clone(text)] = b // the text may be a slice of a whole row
	}
	return b, nil
}
