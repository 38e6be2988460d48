package engine

import (
	"math/big"

	"github.com/zizq/zizq/store"
)

// The reference model's weights (issue 26), as docs/ENGINE.md states the
// rule: a sub-key's next start is an exact number of ms (a rational); a
// job of the sub-key starts at the later of it and the family's virtual
// time, its tag is that start rounded down to the ms, and the next start
// is the start plus the job's quantum divided by the sub-key's weight. A
// sub-budget takes its key's allocation in place of the template's. A
// change of a sub-key's weight rounds its next start down to the ms.

// refKeys are a family template's overrides, by sub-key.
type refKeys map[string]store.KeyOverride

// refSubKey is what follows "<family>/" in key.
func refSubKey(family, key string) string { return key[len(family)+1:] }

// weightOf is the weight template t gives the sub-budget key of family.
func (t *refBudget) weightOf(family, key string) int64 {
	if o, ok := t.keys[refSubKey(family, key)]; ok && o.Weight != 0 {
		return o.Weight
	}
	return 1
}

// keyAlloc is the allocation of the sub-budget key of family under
// template t.
func (t *refBudget) keyAlloc(family, key string) int64 {
	if o, ok := t.keys[refSubKey(family, key)]; ok && o.Allocation != 0 {
		return o.Allocation
	}
	return t.alloc
}

// forKey is template t as the sub-budget key of family has it.
func (t *refBudget) forKey(family, key string) *refBudget {
	c := *t
	c.alloc = t.keyAlloc(family, key)
	return &c
}

// fairStart gives a job of cost on sub-budget sub of family fam its tag,
// and moves the sub-budget's next start on.
func (m *refModel) fairStart(fam, sub *refBudget, cost int64) int64 {
	start := big.NewRat(fam.vtime, 1)
	if sub.next != nil && sub.next.Cmp(start) > 0 {
		start = sub.next
	}
	w := fam.perKey.weightOf(fam.key, sub.key)
	sub.next = new(big.Rat).Add(start, big.NewRat(fam.quantum(cost), w))
	return ratFloor(start)
}

// reweigh rounds down the next start of a sub-budget whose weight the new
// template t changes from the old one's.
func reweigh(sub, old, t *refBudget, family string) {
	if old == nil || sub.next == nil || old.weightOf(family, sub.key) == t.weightOf(family, sub.key) {
		return
	}
	sub.next = big.NewRat(ratFloor(sub.next), 1)
}

func ratFloor(r *big.Rat) int64 {
	return new(big.Int).Div(r.Num(), r.Denom()).Int64() // Euclidean: floor, as the denominator is positive
}

// setKeys gives family key new overrides, its template otherwise as it
// is (a PATCH of keys alone).
func (m *refModel) setKeys(key string, keys refKeys) {
	fam := m.budgets[key]
	t := *fam.perKey
	t.keys = keys
	m.setTemplate(key, &t)
	m.settle()
}
