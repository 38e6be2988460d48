package api

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// Per-sub-key overrides of a family (issue 26, our extension): "keys" in
// a family's body, by sub-key (what follows "<family>/"). A sub-key
// without one has weight 1 and the template's allocation.

// KeyOverride is one sub-key's override as rendered: each member left out
// when not overridden.
type KeyOverride struct {
	// Weight is the sub-key's share of the family's fair turns, 1..1000:
	// a backlogged key of weight 3 is dispatched three times as often as
	// one of weight 1.
	Weight int64 `json:"weight,omitempty"`
	// Allocation is its sub-budget's allocation, in place of the
	// template's.
	Allocation int64 `json:"allocation,omitempty"`
}

// KeyOverrides are a family's overrides by sub-key, as rendered.
type KeyOverrides map[string]KeyOverride

// EncodeMsgpack writes the overrides with their sub-keys sorted, as JSON
// has them: the encoder sorts only maps of a few built-in types.
func (k KeyOverrides) EncodeMsgpack(enc *msgpack.Encoder) error {
	if k == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(k)); err != nil {
		return err
	}
	for _, sub := range slices.Sorted(maps.Keys(k)) {
		if err := enc.EncodeString(sub); err != nil {
			return err
		}
		if err := enc.Encode(k[sub]); err != nil {
			return err
		}
	}
	return nil
}

// KeyOverrideInput is one sub-key's override in a POST or PUT body.
type KeyOverrideInput struct {
	Weight     *int64 `json:"weight,omitempty"`
	Allocation *int64 `json:"allocation,omitempty"`
}

// KeyPatch is one sub-key's member of a PATCH body's keys: each member
// null removes that override, absent keeps it.
type KeyPatch struct {
	Weight     Nullable[int64] `json:"weight,omitempty,omitzero"`
	Allocation Nullable[int64] `json:"allocation,omitempty,omitzero"`
}

// keyMembers are the members a key override may have.
var keyMembers = []string{"weight", "allocation"}

// KeyMembers returns the members a key override may have, for the
// server's refusal of any other in a POST or PUT body.
func KeyMembers() []string { return slices.Clone(keyMembers) }

// decodeKeysPatch reads the keys member of a budget patch: an object from
// sub-key to null (remove the key's override) or to a KeyPatch.
func decodeKeysPatch(m member) (map[string]Nullable[KeyPatch], error) {
	o := patchBody{prefix: m.prefix, path: m.name + "."}
	if !isObject(m.raw) || json.Unmarshal(m.raw, &o.members) != nil {
		return nil, &DecodeError{Msg: m.prefix + m.name + " must be an object"}
	}
	out := make(map[string]Nullable[KeyPatch], len(o.members))
	subs := make([]string, 0, len(o.members))
	for sub := range o.members {
		subs = append(subs, sub)
	}
	slices.Sort(subs) // the first bad member named is always the same
	for _, sub := range subs {
		kp, err := nullableWith(o.member(sub), decodeKeyPatch)
		if err != nil {
			return nil, err
		}
		out[sub] = kp
	}
	return out, nil
}

func decodeKeyPatch(m member) (KeyPatch, error) {
	inner, err := m.object(keyMembers...)
	if err != nil {
		return KeyPatch{}, err
	}
	var kp KeyPatch
	if kp.Weight, err = nullable[int64](inner.member("weight"), wantInteger); err != nil {
		return KeyPatch{}, err
	}
	if kp.Allocation, err = nullable[int64](inner.member("allocation"), wantInteger); err != nil {
		return KeyPatch{}, err
	}
	return kp, nil
}
