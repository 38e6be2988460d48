package engine

import "github.com/zizq/zizq/store"

// Weights (issue 26, our extension). A family's Keys (store.Budget.Keys,
// by sub-key) may give a sub-key a weight, its share of the family's fair
// turns, and an allocation, its sub-budget's in place of the template's.
//
// A sub-budget's tag moves on by quantum ÷ weight per job (families.go),
// so that a backlogged sub-key of weight 3 is dispatched three times as
// often as one of weight 1. Tags are whole milliseconds, so the division
// keeps its remainder: finish is the whole part of the sub-budget's next
// start and finishFrac the remainder, in 1/weight ms. With a quantum of
// 1 ms, a sub-key of weight 3 starts three jobs at one tag before it moves
// to the next, and the shares come out exact in the long run.
//
// A sub-key that had nothing waiting starts again at the family's virtual
// time (fairTag's max), remainder dropped: it banks no credit while away.
// A change of weight applies to jobs enqueued after it (a job keeps its
// tag), and rounds the sub-key's next start down to its millisecond: the
// remainder counted in the old weight's units means nothing in the new.

// Limits of a family's key overrides, checked where a budget body is.
const (
	MaxWeight       = 1000
	MaxKeyOverrides = 10_000
)

// subKeyIn is what follows "<family>/" in key, a key of family famKey.
func subKeyIn(famKey, key string) string { return key[len(famKey)+1:] }

// weightOf is the weight family cfg gives its sub-budget key: its
// override, else 1.
func weightOf(fam store.Budget, key string) int64 {
	if w := fam.Keys[subKeyIn(fam.Key, key)].Weight; w > 0 {
		return w
	}
	return 1
}

// keyAllocation is the allocation of the sub-budget key of family fam
// whose template is t: its override, else the template's.
func keyAllocation(fam store.Budget, t *store.BudgetTemplate, key string) int64 {
	if a := fam.Keys[subKeyIn(fam.Key, key)].Allocation; a > 0 {
		return a
	}
	return t.Allocation
}

// startFrom moves a sub-budget's next start up to the family's virtual
// time vtime when it is behind, dropping its remainder: no credit banked.
func (a *account) startFrom(vtime int64) {
	if vtime > a.finish {
		a.finish, a.finishFrac = vtime, 0
	}
}

// advance moves a sub-budget's next start on by q ÷ its weight (ms),
// keeping the remainder.
func (a *account) advance(q int64) {
	w := max(a.weight, 1)
	n := a.finishFrac + q
	a.finish += n / w
	a.finishFrac = n % w
}

// restoreFinish makes a restored sub-budget's next start at least a job
// of tag and quantum q's finish, tag + q ÷ weight.
func (a *account) restoreFinish(tag, q int64) {
	w := max(a.weight, 1)
	f, frac := tag+q/w, q%w
	if f > a.finish || (f == a.finish && frac > a.finishFrac) {
		a.finish, a.finishFrac = f, frac
	}
}

// setWeight gives a live sub-budget its family's weight for it; a change
// rounds its next start down to the millisecond.
func (a *account) setWeight(w int64) {
	if w != a.weight {
		a.weight, a.finishFrac = w, 0
	}
}
