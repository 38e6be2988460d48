package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// Merge patches (RFC 7396) of PATCH /jobs and PATCH /budgets/{key}, both
// directions: a client encodes a JobPatch or BudgetPatch with Marshal, the
// server reads one with DecodeJobPatch or DecodeBudgetPatch, member by
// member, so that absent and null stay apart and every refusal names the
// member.

// Nullable is a member of a merge patch that can be removed. The zero
// value is absent: the member is left out of the body and leaves the
// field unchanged. Null removes the field's override; Set sets it.
type Nullable[T any] struct {
	value T
	state memberState
}

type memberState uint8

const (
	absent memberState = iota
	null
	set
)

// Set returns a member that sets the field to v.
func Set[T any](v T) Nullable[T] { return Nullable[T]{value: v, state: set} }

// Null returns a member that removes the field's override.
func Null[T any]() Nullable[T] { return Nullable[T]{state: null} }

// IsZero reports whether the member is absent; it is what leaves an absent
// member out of an encoded body (omitzero in JSON, omitempty in
// MessagePack).
func (n Nullable[T]) IsZero() bool { return n.state == absent }

// IsNull reports whether the member is null.
func (n Nullable[T]) IsNull() bool { return n.state == null }

// Get returns the member's value and whether it sets one.
func (n Nullable[T]) Get() (T, bool) { return n.value, n.state == set }

// Merge applies the member to a field held as a pointer: old when absent,
// nil when null, a new pointer to the value when set.
func (n Nullable[T]) Merge(old *T) *T {
	switch n.state {
	case null:
		return nil
	case set:
		v := n.value
		return &v
	}
	return old
}

// MarshalJSON writes the value, or null for a null (or absent) member.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.state != set {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// EncodeMsgpack writes the value, or nil for a null (or absent) member.
func (n Nullable[T]) EncodeMsgpack(enc *msgpack.Encoder) error {
	if n.state != set {
		return enc.EncodeNil()
	}
	return enc.Encode(n.value)
}

// JobPatch is the body of PATCH /jobs/{id} and PATCH /jobs (docs/API.md
// §Patching jobs). Nil and absent members leave the job's fields unchanged.
type JobPatch struct {
	Queue    *string `json:"queue,omitempty"`
	Priority *uint16 `json:"priority,omitempty"`
	// ReadyAt null makes a scheduled job ready now.
	ReadyAt Nullable[uint64] `json:"ready_at,omitempty,omitzero"`
	// RetryLimit null falls back to the server's default retry limit.
	RetryLimit Nullable[uint32] `json:"retry_limit,omitempty,omitzero"`
	// Backoff null falls back to the server's default; a value replaces
	// the job's backoff whole.
	Backoff Nullable[Backoff] `json:"backoff,omitempty,omitzero"`
	// Retention null drops both overrides; a value is merged member by
	// member into the job's.
	Retention Nullable[RetentionPatch] `json:"retention,omitempty,omitzero"`
}

// RetentionPatch is the retention member of a JobPatch.
type RetentionPatch struct {
	CompletedMs Nullable[uint64] `json:"completed_ms,omitempty,omitzero"`
	DeadMs      Nullable[uint64] `json:"dead_ms,omitempty,omitzero"`
}

// BudgetPatch is the body of PATCH /budgets/{key} (docs/API.md
// §Patching a budget). Nil members leave the budget's fields unchanged. A
// strategy Type that differs from the budget's replaces its whole strategy, so
// it must come with what that strategy needs.
type BudgetPatch struct {
	Allocation *int64         `json:"allocation,omitempty"`
	Strategy   *StrategyPatch `json:"strategy,omitempty"`
	// PerKey null makes a family a plain budget; a value is merged member
	// by member into the family's template, as the budget's own members
	// are, or, on a plain budget, makes it a family and must then be
	// complete (our extension, as are Paused and PausedUntil).
	PerKey Nullable[TemplatePatch] `json:"per_key,omitempty,omitzero"`
	// Keys null removes a family's every key override; a value merges
	// per sub-key, a null member removing that key's (keys.go).
	Keys Nullable[map[string]Nullable[KeyPatch]] `json:"keys,omitempty,omitzero"`
	// Paused true pauses the budget; false or null resumes it at once,
	// removing any PausedUntil too (so it may not come with one).
	Paused Nullable[bool] `json:"paused,omitempty,omitzero"`
	// PausedUntil (unix ms) pauses the budget until then; null removes the
	// end.
	PausedUntil Nullable[uint64] `json:"paused_until,omitempty,omitzero"`
	// Adaptive is merged field by field; null removes the back-off (issue
	// 26).
	Adaptive Nullable[AdaptivePatch] `json:"adaptive,omitempty,omitzero"`
}

// TemplatePatch is the per_key member of a BudgetPatch: the members of a
// budget body, patched like the budget's own.
type TemplatePatch struct {
	Allocation *int64         `json:"allocation,omitempty"`
	Strategy   *StrategyPatch `json:"strategy,omitempty"`
}

// StrategyPatch is the strategy member of a BudgetPatch.
type StrategyPatch struct {
	Type       *string `json:"type,omitempty"`
	DurationMs *int64  `json:"duration_ms,omitempty"`
	// Burst null removes the burst override: capacity falls back to the
	// allocation.
	Burst Nullable[int64] `json:"burst,omitempty,omitzero"`
	// Reset and Timezone are a calendar budget's; a change keeps what it
	// spent in the current period.
	Reset    *string `json:"reset,omitempty"`
	Timezone *string `json:"timezone,omitempty"`
}

// FieldError is a merge patch that decodes but names a member it must not:
// one that is unknown, or null where the field cannot be removed. The
// server answers it with 422 and the message.
type FieldError struct {
	Msg string
}

// Error returns the message as it goes into the error body.
func (e *FieldError) Error() string { return e.Msg }

// DecodeJobPatch reads a PATCH /jobs body in format f. A body that does not
// decode, or a member of the wrong type, is a *DecodeError; an unknown or
// wrongly null member is a *FieldError. Values are not checked against the
// server's rules (names, bounds): that is the server's part.
func DecodeJobPatch(f Format, data []byte) (JobPatch, error) {
	// type, payload and budgets are fields of a job that PATCH cannot change:
	// ignored (docs/API.md §Patching jobs), so that a job as read can be sent
	// back.
	body, err := decodePatchBody(f, data, "queue", "priority", "ready_at", "retry_limit", "backoff", "retention",
		"type", "payload", "budgets")
	if err != nil {
		return JobPatch{}, err
	}
	var p JobPatch
	if p.Queue, err = optional[string](body.member("queue"), wantString); err != nil {
		return JobPatch{}, err
	}
	if p.Priority, err = optional[uint16](body.member("priority"), wantUint16); err != nil {
		return JobPatch{}, err
	}
	if p.ReadyAt, err = nullable[uint64](body.member("ready_at"), wantNonNeg); err != nil {
		return JobPatch{}, err
	}
	if p.RetryLimit, err = nullable[uint32](body.member("retry_limit"), wantUint32); err != nil {
		return JobPatch{}, err
	}
	if p.Backoff, err = nullableWith(body.member("backoff"), decodeBackoff); err != nil {
		return JobPatch{}, err
	}
	if p.Retention, err = nullableWith(body.member("retention"), decodeRetention); err != nil {
		return JobPatch{}, err
	}
	return p, nil
}

// decodeBackoff reads a backoff member: all three fields, as on enqueue.
func decodeBackoff(m member) (Backoff, error) {
	inner, err := m.object("exponent", "base_ms", "jitter_ms")
	if err != nil {
		return Backoff{}, err
	}
	var in BackoffRequest
	for _, f := range []struct {
		name, want string
		v          any
	}{{"exponent", wantNumber, &in.Exponent}, {"base_ms", wantUint32, &in.BaseMs}, {"jitter_ms", wantUint32, &in.JitterMs}} {
		if g := inner.member(f.name); g.set {
			if err := g.decodeAs(f.v, f.want); err != nil {
				return Backoff{}, err
			}
		}
	}
	b, missing := in.Complete()
	if missing != "" {
		return Backoff{}, &DecodeError{Msg: m.prefix + "missing field `" + missing + "`"}
	}
	return b, nil
}

func decodeRetention(m member) (RetentionPatch, error) {
	inner, err := m.object("completed_ms", "dead_ms")
	if err != nil {
		return RetentionPatch{}, err
	}
	var r RetentionPatch
	if r.CompletedMs, err = nullable[uint64](inner.member("completed_ms"), wantNonNeg); err != nil {
		return RetentionPatch{}, err
	}
	if r.DeadMs, err = nullable[uint64](inner.member("dead_ms"), wantNonNeg); err != nil {
		return RetentionPatch{}, err
	}
	return r, nil
}

// DecodeBudgetPatch reads a PATCH /budgets/{key} body in format f, with the
// errors of DecodeJobPatch; a strategy type other than the two known ones
// is a *DecodeError too.
func DecodeBudgetPatch(f Format, data []byte) (BudgetPatch, error) {
	// key is ignored, as in POST and PUT bodies: the path names the budget.
	body, err := decodePatchBody(f, data, "allocation", "strategy", "key", "per_key", "keys", "paused", "paused_until", "adaptive")
	if err != nil {
		return BudgetPatch{}, err
	}
	var p BudgetPatch
	if p.Allocation, p.Strategy, err = decodeBudgetMembers(body); err != nil {
		return BudgetPatch{}, err
	}
	if p.PerKey, err = nullableWith(body.member("per_key"), decodeTemplate); err != nil {
		return BudgetPatch{}, err
	}
	if p.Keys, err = nullableWith(body.member("keys"), decodeKeysPatch); err != nil {
		return BudgetPatch{}, err
	}
	if p.Paused, err = nullable[bool](body.member("paused"), wantBool); err != nil {
		return BudgetPatch{}, err
	}
	if p.PausedUntil, err = nullable[uint64](body.member("paused_until"), wantNonNeg); err != nil {
		return BudgetPatch{}, err
	}
	if p.Adaptive, err = nullableWith(body.member("adaptive"), decodeAdaptive); err != nil {
		return BudgetPatch{}, err
	}
	return p, nil
}

// decodeBudgetMembers reads the allocation and strategy members of a
// budget patch or of its per_key member.
func decodeBudgetMembers(body patchBody) (*int64, *StrategyPatch, error) {
	alloc, err := optional[int64](body.member("allocation"), wantInteger)
	if err != nil {
		return nil, nil, err
	}
	strategy := body.member("strategy")
	if !strategy.set {
		return alloc, nil, nil
	}
	if err := strategy.notNull(); err != nil {
		return nil, nil, err
	}
	inner, err := strategy.object("type", "duration_ms", "burst", "reset", "timezone")
	if err != nil {
		return nil, nil, err
	}
	s, err := decodeStrategy(inner)
	if err != nil {
		return nil, nil, err
	}
	return alloc, &s, nil
}

// decodeTemplate reads a per_key member: allocation and strategy, merged
// like the budget's own.
func decodeTemplate(m member) (TemplatePatch, error) {
	inner, err := m.object("allocation", "strategy")
	if err != nil {
		return TemplatePatch{}, err
	}
	alloc, strategy, err := decodeBudgetMembers(inner)
	if err != nil {
		return TemplatePatch{}, err
	}
	return TemplatePatch{Allocation: alloc, Strategy: strategy}, nil
}

func decodeStrategy(inner patchBody) (StrategyPatch, error) {
	for _, name := range []string{"type", "duration_ms", "reset", "timezone"} {
		if err := inner.member(name).notNull(); err != nil {
			return StrategyPatch{}, err
		}
	}
	var s StrategyPatch
	var err error
	if s.Type, err = optional[string](inner.member("type"), wantString); err != nil {
		return StrategyPatch{}, err
	}
	if s.Type != nil && *s.Type != StrategyWhileInFlight && *s.Type != StrategyTimeBased && *s.Type != StrategyCalendar {
		return StrategyPatch{}, &DecodeError{Msg: fmt.Sprintf("%sunknown variant `%s`, expected `%s`, `%s` or `%s`",
			inner.prefix, *s.Type, StrategyWhileInFlight, StrategyTimeBased, StrategyCalendar)}
	}
	if s.Reset, err = optional[string](inner.member("reset"), wantString); err != nil {
		return StrategyPatch{}, err
	}
	if s.Timezone, err = optional[string](inner.member("timezone"), wantString); err != nil {
		return StrategyPatch{}, err
	}
	if s.DurationMs, err = optional[int64](inner.member("duration_ms"), wantInteger); err != nil {
		return StrategyPatch{}, err
	}
	if s.Burst, err = nullable[int64](inner.member("burst"), wantInteger); err != nil {
		return StrategyPatch{}, err
	}
	return s, nil
}

// Complete returns the backoff the request describes when it holds all
// three members, else the name of the first one missing.
func (b BackoffRequest) Complete() (v Backoff, missing string) {
	switch {
	case b.Exponent == nil:
		return Backoff{}, "exponent"
	case b.BaseMs == nil:
		return Backoff{}, "base_ms"
	case b.JitterMs == nil:
		return Backoff{}, "jitter_ms"
	}
	return Backoff{Exponent: *b.Exponent, BaseMs: *b.BaseMs, JitterMs: *b.JitterMs}, ""
}

// What patch members must be, in their type errors.
const (
	wantString  = "a string"
	wantInteger = "an integer"
	wantNonNeg  = "a non-negative integer"
	wantUint16  = "an integer 0..65535"
	wantUint32  = "an integer 0..4294967295"
	wantNumber  = "a number"
	wantBool    = "true or false"
)

// patchBody is one object of a merge patch: its members by exact name, and
// where it sits, for error texts.
type patchBody struct {
	prefix  string // "invalid JSON: " or "invalid MessagePack: "
	path    string // "" for the body, "strategy." for a member object
	members map[string]json.RawMessage
}

// decodePatchBody reads a merge patch body, which must be an object whose
// members are all among known.
func decodePatchBody(f Format, data []byte, known ...string) (patchBody, error) {
	var raw json.RawMessage
	if err := Unmarshal(f, data, &raw); err != nil {
		return patchBody{}, err
	}
	o := patchBody{prefix: "invalid JSON: "}
	what := "a JSON object"
	if f == MsgPack {
		o.prefix, what = "invalid MessagePack: ", "a map"
	}
	if !isObject(raw) {
		return patchBody{}, &DecodeError{Msg: o.prefix + "body must be " + what}
	}
	// Members of a valid object: this cannot fail.
	if err := json.Unmarshal(raw, &o.members); err != nil {
		return patchBody{}, &DecodeError{Msg: o.prefix + err.Error()}
	}
	return o, o.only(known...)
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// only refuses members not among known, naming the first in byte order.
func (o patchBody) only(known ...string) error {
	var unknown []string
	for name := range o.members {
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return &FieldError{Msg: fmt.Sprintf("unknown field %q", o.path+unknown[0])}
}

// member is one member of a merge patch: absent, null, or a value.
type member struct {
	name   string // with its path: "strategy.type"
	prefix string
	set    bool
	null   bool
	raw    json.RawMessage
}

func (o patchBody) member(name string) member {
	m := member{name: o.path + name, prefix: o.prefix}
	if raw, ok := o.members[name]; ok {
		m.set, m.null, m.raw = true, string(raw) == "null", raw
	}
	return m
}

// notNull refuses null for a member whose field cannot be removed.
func (m member) notNull() error {
	if m.null {
		return &FieldError{Msg: m.name + " cannot be null"}
	}
	return nil
}

// decodeAs decodes a present member into v; a value of the wrong JSON type
// is a *DecodeError saying what the member must be.
func (m member) decodeAs(v any, want string) error {
	if err := json.Unmarshal(m.raw, v); err != nil {
		return &DecodeError{Msg: m.prefix + m.name + " must be " + want}
	}
	return nil
}

// object reads a present, non-null member that is itself an object whose
// members are all among known.
func (m member) object(known ...string) (patchBody, error) {
	o := patchBody{prefix: m.prefix, path: m.name + "."}
	if !isObject(m.raw) || json.Unmarshal(m.raw, &o.members) != nil {
		return o, &DecodeError{Msg: m.prefix + m.name + " must be an object"}
	}
	return o, o.only(known...)
}

// optional decodes a member that may be absent but not null.
func optional[T any](m member, want string) (*T, error) {
	if !m.set {
		return nil, nil
	}
	if err := m.notNull(); err != nil {
		return nil, err
	}
	var v T
	if err := m.decodeAs(&v, want); err != nil {
		return nil, err
	}
	return &v, nil
}

// nullable decodes a member that may be absent, null or a value.
func nullable[T any](m member, want string) (Nullable[T], error) {
	return nullableWith(m, func(m member) (T, error) {
		var v T
		err := m.decodeAs(&v, want)
		return v, err
	})
}

func nullableWith[T any](m member, decode func(member) (T, error)) (Nullable[T], error) {
	switch {
	case !m.set:
		return Nullable[T]{}, nil
	case m.null:
		return Null[T](), nil
	}
	v, err := decode(m)
	if err != nil {
		return Nullable[T]{}, err
	}
	return Set(v), nil
}
