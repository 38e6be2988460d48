package engine

import "github.com/zizq/zizq/store"

// The property test's weights and allocation overrides (issue 26): the
// family's puts come with random Keys, and a PATCH of its Keys alone is
// one more operation.

// randomKeys returns random overrides for some of propSubs' sub-keys: a
// weight now small, now large (many jobs to one tag), an allocation; nil
// for none.
func (r *propRun) randomKeys() map[string]store.KeyOverride {
	if r.rng.IntN(3) == 0 {
		return nil
	}
	keys := map[string]store.KeyOverride{}
	for _, sub := range propSubs {
		var o store.KeyOverride
		switch r.rng.IntN(4) {
		case 0:
			continue
		case 1:
			o.Weight = []int64{1, 2, 3, 7, MaxWeight}[r.rng.IntN(5)]
		case 2:
			o.Allocation = int64(1 + r.rng.IntN(4))
		default:
			o.Weight, o.Allocation = int64(1+r.rng.IntN(4)), int64(1+r.rng.IntN(4))
		}
		keys[refSubKey(propFamily, sub)] = o
	}
	if len(keys) == 0 {
		return nil
	}
	return keys
}

// keyedConfig is the configuration the template tmpl (a store.Budget) and
// the overrides keys give the sub-budget sub.
func keyedConfig(tmpl store.Budget, keys map[string]store.KeyOverride, sub string) store.Budget {
	if a := keys[refSubKey(propFamily, sub)].Allocation; a > 0 {
		tmpl.Allocation = a
	}
	return tmpl
}

// templateConfig is a model template as a store.Budget.
func templateConfig(t *refBudget) store.Budget {
	cfg := store.Budget{Allocation: t.alloc, Strategy: store.WhileInFlight}
	if t.timeBased {
		cfg.Strategy, cfg.DurationMs, cfg.Burst = store.TimeBased, t.dur, t.burst
	}
	return cfg
}

// patchKeys replaces the family's overrides alone, as a PATCH of keys
// does; refused when a bound job of a sub-budget costs more than its new
// allocation pays.
func (r *propRun) patchKeys() {
	fam := r.m.budgets[propFamily]
	if fam == nil || fam.perKey == nil {
		return
	}
	keys := r.randomKeys()
	r.step("patch keys of %s %v", propFamily, keys)
	_, _, err := r.e.PatchBudget(propFamily, func(cfg *store.Budget) error {
		cfg.Keys = keys // a new map: randomKeys made it
		return nil
	})
	tmpl := templateConfig(fam.perKey)
	for _, sub := range propSubs {
		if r.m.maxBoundCost(sub) > maxCost(keyedConfig(tmpl, keys, sub)) {
			if err == nil {
				r.fail("patch keys: the engine accepted an allocation of %s below a bound cost", sub)
			}
			return
		}
	}
	if err != nil {
		r.fail("patch keys: %v", err)
	}
	r.m.setKeys(propFamily, keys)
}

// subMost is the largest cost a job of sub-budget sub of family b may
// have, the family's own limits included.
func subMost(b *refBudget, sub string) int64 {
	t := b.perKey.forKey(b.key, sub)
	return min(b.alloc, b.capacity(), t.alloc, t.capacity())
}
