package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// A family's per-sub-key overrides, "keys" (issue 26, docs/API.md
// §Families): checked here against the value rules (422, naming the
// member), against the budget's jobs by the engine.

// keysInput returns the overrides of a POST or PUT body; nil for none.
// A member with neither weight nor allocation is no override.
func keysInput(in api.BudgetInput) (map[string]store.KeyOverride, error) {
	if in.Keys == nil {
		return nil, nil
	}
	if in.PerKey == nil {
		return nil, errKeysWithoutFamily
	}
	out := make(map[string]store.KeyOverride, len(in.Keys))
	for _, sub := range slices.Sorted(maps.Keys(in.Keys)) {
		k := in.Keys[sub]
		o, err := checkOverride(sub, orZero(k.Weight), orZero(k.Allocation), k.Weight != nil, k.Allocation != nil)
		if err != nil {
			return nil, err
		}
		if o != (store.KeyOverride{}) {
			out[sub] = o
		}
	}
	return checkKeyCount(out)
}

var errKeysWithoutFamily = ruleErrorf("keys is only valid for a family: a budget with per_key")

// applyKeys merges the keys member of a PATCH into a family's overrides:
// null removes them all; a sub-key's null removes its override, and a
// sub-key's members merge into it (a member's null removing that one). A
// budget that is not a family (any more) has none.
func (p *budgetPatch) applyKeys(cfg *store.Budget) error {
	patch, set := p.Keys.Get()
	switch {
	case p.Keys.IsNull():
		cfg.Keys = nil
	case set && cfg.PerKey == nil:
		return errKeysWithoutFamily
	case set:
		merged, err := mergeKeys(cfg.Keys, patch)
		if err != nil {
			return err
		}
		cfg.Keys = merged
	}
	if cfg.PerKey == nil {
		cfg.Keys = nil
	}
	return nil
}

// mergeKeys returns old with patch merged in, as a new map (the engine's
// is not changed until the whole result is taken); nil for none.
func mergeKeys(old map[string]store.KeyOverride, patch map[string]api.Nullable[api.KeyPatch]) (map[string]store.KeyOverride, error) {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]store.KeyOverride{}
	}
	for _, sub := range slices.Sorted(maps.Keys(patch)) {
		kp, set := patch[sub].Get()
		if !set {
			delete(out, sub)
			continue
		}
		o := out[sub]
		w, hasW := kp.Weight.Get()
		a, hasA := kp.Allocation.Get()
		if hasW {
			o.Weight = w
		} else if kp.Weight.IsNull() {
			o.Weight = 0
		}
		if hasA {
			o.Allocation = a
		} else if kp.Allocation.IsNull() {
			o.Allocation = 0
		}
		o, err := checkOverride(sub, o.Weight, o.Allocation, hasW, hasA)
		if err != nil {
			return nil, err
		}
		if o == (store.KeyOverride{}) {
			delete(out, sub)
		} else {
			out[sub] = o
		}
	}
	return checkKeyCount(out)
}

// checkOverride checks the override of sub-key sub: its name, and each
// member given (hasWeight, hasAlloc) against its range.
func checkOverride(sub string, weight, alloc int64, hasWeight, hasAlloc bool) (store.KeyOverride, error) {
	if err := checkSubKeyName(sub); err != nil {
		return store.KeyOverride{}, err
	}
	path := "keys." + sub
	if hasWeight && (weight < 1 || weight > engine.MaxWeight) {
		return store.KeyOverride{}, ruleErrorf("%s.weight must be an integer from 1 to %d, got %d", path, engine.MaxWeight, weight)
	}
	if hasAlloc {
		switch {
		case alloc < 1:
			return store.KeyOverride{}, ruleErrorf("%s.allocation must be at least 1", path)
		case alloc > budget.MaxAllocation:
			return store.KeyOverride{}, ruleErrorf("%s.allocation must be at most %d", path, int64(budget.MaxAllocation))
		}
	}
	return store.KeyOverride{Weight: weight, Allocation: alloc}, nil
}

// checkSubKeyName refuses a member of keys that is no sub-key: what
// follows "<family>/" in a budget key, so never empty nor holding a '/'.
func checkSubKeyName(sub string) error {
	switch {
	case sub == "":
		return ruleErrorf("keys: a sub-key must not be empty")
	case strings.IndexByte(sub, '/') >= 0:
		return ruleErrorf("keys: sub-key %q must not contain '/'", sub)
	}
	if err := api.ValidateName(fmt.Sprintf("keys: sub-key %q", sub), sub); err != nil {
		return ruleErrorf("%s", err)
	}
	return nil
}

// checkKeyCount refuses more overrides than a family may hold; nil for
// none.
func checkKeyCount(keys map[string]store.KeyOverride) (map[string]store.KeyOverride, error) {
	if len(keys) > engine.MaxKeyOverrides {
		return nil, ruleErrorf("keys holds %d overrides: a family holds at most %d", len(keys), engine.MaxKeyOverrides)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return keys, nil
}

// unknownKeyMember refuses a member of a key override that none has, as
// unknownStrategyMember does in a strategy: a misspelt "wieght" would
// otherwise leave the key at weight 1, and nobody would know.
func unknownKeyMember(f api.Format, data []byte) error {
	var probe struct {
		Keys map[string]map[string]any `json:"keys"`
	}
	if api.Unmarshal(f, data, &probe) != nil {
		return nil // the body decoded; a shape this probe cannot read was refused there
	}
	for _, sub := range slices.Sorted(maps.Keys(probe.Keys)) {
		for _, name := range slices.Sorted(maps.Keys(probe.Keys[sub])) {
			if !slices.Contains(api.KeyMembers(), name) {
				return ruleErrorf("keys.%s.%s is not a field of a key override (expected %s)", sub, name, strings.Join(api.KeyMembers(), " or "))
			}
		}
	}
	return nil
}

// wireKeys renders a family's overrides; nil when it has none.
func wireKeys(keys map[string]store.KeyOverride) api.KeyOverrides {
	if len(keys) == 0 {
		return nil
	}
	out := make(api.KeyOverrides, len(keys))
	for sub, o := range keys {
		out[sub] = api.KeyOverride{Weight: o.Weight, Allocation: o.Allocation}
	}
	return out
}

func orZero(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
