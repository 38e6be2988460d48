package cmd

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server/budget"
	"github.com/zizq/zizq/server/engine"
)

// KeyFlags are the per-sub-key overrides of a family (issue 26): on
// create and put --key-weight SUB=N and --key-allocation SUB=N, each
// repeatable; on patch also SUB= (no value) to remove that one override,
// --remove-key SUB to remove a key's every override, and --no-keys to
// remove them all.
type KeyFlags struct {
	Weights, Allocations []string
	Remove               []string
	None                 bool
}

func (k *KeyFlags) register(fs *pflag.FlagSet, c *cobra.Command, patch bool) {
	weight := fmt.Sprintf("a family's sub-key SUB's share of its turns, SUB=N (N from 1 to %d; default 1); repeatable", engine.MaxWeight)
	alloc := "a family's sub-key SUB's allocation in place of --per-key-allocation, SUB=N; repeatable"
	if patch {
		weight += "; SUB= removes it"
		alloc += "; SUB= removes it"
	}
	fs.StringArrayVar(&k.Weights, "key-weight", nil, weight)
	fs.StringArrayVar(&k.Allocations, "key-allocation", nil, alloc)
	for _, name := range []string{"key-weight", "key-allocation"} {
		_ = c.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	if !patch {
		return
	}
	fs.StringArrayVar(&k.Remove, "remove-key", nil, "remove a family's every override of sub-key SUB (its weight back to 1, its allocation the template's); repeatable")
	fs.BoolVar(&k.None, "no-keys", false, "remove every override of the family's sub-keys")
	_ = c.RegisterFlagCompletionFunc("remove-key", cobra.NoFileCompletions)
}

// keySetting is one SUB=N of a --key-… flag; set is false for SUB=.
type keySetting struct {
	sub   string
	value int64
	set   bool
}

// parse reads the values of flag, each SUB=N (or SUB= when removable),
// refusing a sub-key given twice and a value out of [1, most].
func parseKeySettings(flag string, values []string, most int64, removable bool) ([]keySetting, error) {
	var out []keySetting
	seen := map[string]bool{}
	for _, v := range values {
		i := strings.LastIndexByte(v, '=')
		if i < 0 {
			return nil, usageError{fmt.Errorf("--%s %q: want SUB=N", flag, v)}
		}
		s := keySetting{sub: v[:i]}
		if err := checkSubKey(flag, s.sub); err != nil {
			return nil, err
		}
		if seen[s.sub] {
			return nil, usageError{fmt.Errorf("--%s: sub-key %q is given twice", flag, s.sub)}
		}
		seen[s.sub] = true
		if num := v[i+1:]; num != "" || !removable {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n < 1 || n > most {
				return nil, usageError{fmt.Errorf("--%s %q: N must be an integer from 1 to %d", flag, v, most)}
			}
			s.value, s.set = n, true
		}
		out = append(out, s)
	}
	return out, nil
}

// checkSubKey refuses what the server would refuse as a sub-key.
func checkSubKey(flag, sub string) error {
	switch {
	case sub == "":
		return usageError{fmt.Errorf("--%s: SUB must not be empty", flag)}
	case strings.IndexByte(sub, '/') >= 0:
		return usageError{fmt.Errorf("--%s: sub-key %q must not contain '/'", flag, sub)}
	}
	if err := api.ValidateName("sub-key", sub); err != nil {
		return usageError{fmt.Errorf("--%s: %w", flag, err)}
	}
	return nil
}

// settings reads both --key-… flags.
func (k *KeyFlags) settings(removable bool) (weights, allocs []keySetting, err error) {
	if weights, err = parseKeySettings("key-weight", k.Weights, engine.MaxWeight, removable); err != nil {
		return nil, nil, err
	}
	allocs, err = parseKeySettings("key-allocation", k.Allocations, budget.MaxAllocation, removable)
	return weights, allocs, err
}

// input builds the keys of a POST or PUT body; family says whether the
// body has a template, without which keys mean nothing.
func (k *KeyFlags) input(family bool) (map[string]api.KeyOverrideInput, error) {
	weights, allocs, err := k.settings(false)
	if err != nil || len(weights)+len(allocs) == 0 {
		return nil, err
	}
	if !family {
		return nil, usageError{fmt.Errorf("--key-weight and --key-allocation are a family's: give the --per-key-… flags too")}
	}
	out := map[string]api.KeyOverrideInput{}
	for _, w := range weights {
		o := out[w.sub]
		o.Weight = &w.value
		out[w.sub] = o
	}
	for _, a := range allocs {
		o := out[a.sub]
		o.Allocation = &a.value
		out[a.sub] = o
	}
	return out, nil
}

// patch builds the keys member of a PATCH: absent when no flag of keys
// was given.
func (k *KeyFlags) patch(c *cobra.Command) (api.Nullable[map[string]api.Nullable[api.KeyPatch]], error) {
	var none api.Nullable[map[string]api.Nullable[api.KeyPatch]]
	weights, allocs, err := k.settings(true)
	if err != nil {
		return none, err
	}
	if k.None {
		if anyChanged(c, "key-weight", "key-allocation", "remove-key") {
			return none, usageError{fmt.Errorf("--no-keys cannot come with other --key-… flags or --remove-key")}
		}
		return api.Null[map[string]api.Nullable[api.KeyPatch]](), nil
	}
	out := map[string]api.Nullable[api.KeyPatch]{}
	for _, sub := range k.Remove {
		if err := checkSubKey("remove-key", sub); err != nil {
			return none, err
		}
		out[sub] = api.Null[api.KeyPatch]()
	}
	member := func(s keySetting) api.Nullable[int64] {
		if s.set {
			return api.Set(s.value)
		}
		return api.Null[int64]()
	}
	for _, group := range []struct {
		settings []keySetting
		field    func(*api.KeyPatch) *api.Nullable[int64]
	}{
		{weights, func(p *api.KeyPatch) *api.Nullable[int64] { return &p.Weight }},
		{allocs, func(p *api.KeyPatch) *api.Nullable[int64] { return &p.Allocation }},
	} {
		for _, s := range group.settings {
			if removed := out[s.sub]; removed.IsNull() {
				return none, usageError{fmt.Errorf("--remove-key %s cannot come with a --key-… flag of %s", s.sub, s.sub)}
			}
			p, _ := out[s.sub].Get()
			*group.field(&p) = member(s)
			out[s.sub] = api.Set(p)
		}
	}
	if len(out) == 0 {
		return none, nil
	}
	return api.Set(out), nil
}

// keysTable prints a family's overrides under its row: each sub-key with
// its weight and allocation, "-" where it has none (weight 1, the
// template's allocation).
func keysTable(w io.Writer, b api.Budget) error {
	if len(b.Keys) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	t := newTable(w, "SUB-KEY", "WEIGHT", "ALLOCATION")
	for _, sub := range slices.Sorted(maps.Keys(b.Keys)) {
		o := b.Keys[sub]
		t.row(sub, dashZero(o.Weight), dashZero(o.Allocation))
	}
	return t.flush()
}

func dashZero(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// anyWeighted reports whether a sub-budget listed has a weight other than
// 1: the WEIGHT column comes only then.
func anyWeighted(budgets []api.Budget) bool {
	return slices.ContainsFunc(budgets, func(b api.Budget) bool { return b.Weight > 1 })
}

// anyKeys reports whether a family listed has overrides: the KEYS column
// comes only then.
func anyKeys(budgets []api.Budget) bool {
	return slices.ContainsFunc(budgets, func(b api.Budget) bool { return len(b.Keys) > 0 })
}

// formatWeight is a budget's WEIGHT cell: a sub-budget's weight, "-" for
// other budgets.
func formatWeight(b api.Budget) string { return dashZero(b.Weight) }

// formatKeys is a budget's KEYS cell: how many sub-keys a family
// overrides, "-" when none.
func formatKeys(b api.Budget) string { return dashZero(int64(len(b.Keys))) }
