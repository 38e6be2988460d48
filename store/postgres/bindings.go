package postgres

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/zizq/zizq/store"
)

// A job's bindings are stored as JSON text, [{"key":…,"cost":…},…], the
// form SQLite's store keeps, so that SQL can filter on them
// (json_array_elements, Filter.BudgetKeys) and a backup copies them as
// they are.

// binding is the stored JSON form of a Binding.
type binding struct {
	Key  string `json:"key"`
	Cost int64  `json:"cost"`
}

func encodeBindings(bs []store.Binding) string {
	out := make([]binding, len(bs))
	for i, b := range bs {
		out[i] = binding(b)
	}
	// Invalid UTF-8 (which the API lets through to no key) becomes U+FFFD;
	// so this cannot fail.
	buf, _ := jsonv2.Marshal(out, jsontext.AllowInvalidUTF8(true))
	return string(buf)
}

func decodeBindings(s string) ([]store.Binding, error) {
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

// bindingsCache holds the bindings decoded from each text met so far, for
// Load: a backlog binds most of its jobs alike. The jobs of one text
// share its slice, which nobody changes.
type bindingsCache map[string][]store.Binding

const bindingsCacheMax = 4096

func (c bindingsCache) decode(text string) ([]store.Binding, error) {
	if b, ok := c[text]; ok {
		return b, nil
	}
	b, err := decodeBindings(text)
	if err != nil {
		return nil, err
	}
	if len(c) < bindingsCacheMax {
		c[text] = b
	}
	return b, nil
}
