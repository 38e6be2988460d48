package core

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// A cron entry's job template is the validated enqueue request it fires
// (an engine.NewJob without ready_at or start_by), kept in the store as
// the JSON below. Every field of engine.NewJob but ReadyAt, StartBy and
// BatchOpen (which the core decides at each enqueue) has its place here: a
// field added there must be added here and to the transports' echo, or
// the entries would drop it (TestCronTemplate_CoversNewJob tells).

type cronTemplate struct {
	Type       string             `json:"type"`
	Queue      string             `json:"queue"`
	Priority   uint16             `json:"priority"`
	Payload    json.RawMessage    `json:"payload"`
	RetryLimit *uint32            `json:"retry_limit,omitempty"`
	Backoff    *templateBackoff   `json:"backoff,omitempty"`
	Retention  *templateRetention `json:"retention,omitempty"`
	Budgets    []templateBinding  `json:"budgets,omitempty"`
	// UniqueKey and UniqueWhile: each fire is a unique enqueue; its scope
	// as its wire name.
	UniqueKey   string `json:"unique_key,omitempty"`
	UniqueWhile string `json:"unique_while,omitempty"`
	// Batch: each fire is a batched enqueue, which may fold.
	Batch *templateBatch `json:"batch,omitempty"`
	// StartWithinMs: each fire's job must be dispatched within it.
	StartWithinMs int64 `json:"start_within_ms,omitempty"`
}

type templateBatch struct {
	Key  string `json:"key"`
	When string `json:"when"`
	Fold string `json:"fold"`
}

type templateBackoff struct {
	Exponent float32 `json:"exponent"`
	BaseMs   uint32  `json:"base_ms"`
	JitterMs uint32  `json:"jitter_ms"`
}

type templateRetention struct {
	CompletedMs *uint64 `json:"completed_ms,omitempty"`
	DeadMs      *uint64 `json:"dead_ms,omitempty"`
}

type templateBinding struct {
	Key        string          `json:"key"`
	Cost       int64           `json:"cost"`
	CreateWith *templateBudget `json:"create_with,omitempty"`
}

type templateBudget struct {
	Allocation int64  `json:"allocation"`
	Strategy   string `json:"strategy"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	Burst      int64  `json:"burst,omitempty"`
}

// encodeTemplate returns the stored form of a job template. The payload
// is kept byte for byte (canonical JSON already).
func encodeTemplate(j engine.NewJob) ([]byte, error) {
	t := cronTemplate{
		Type: j.Type, Queue: j.Queue, Priority: j.Priority, Payload: j.Payload,
		RetryLimit: j.RetryLimit, StartWithinMs: j.StartWithinMs,
	}
	if j.UniqueKey != "" {
		t.UniqueKey, t.UniqueWhile = j.UniqueKey, j.UniqueWhile.String()
	}
	if b := j.Batch; b != nil {
		t.Batch = &templateBatch{Key: b.Key, When: b.When, Fold: b.Fold}
	}
	if r := j.Retention; r != nil {
		t.Retention = &templateRetention{CompletedMs: r.CompletedMs, DeadMs: r.DeadMs}
	}
	if len(t.Payload) == 0 {
		t.Payload = json.RawMessage("null")
	}
	if b := j.Backoff; b != nil {
		t.Backoff = &templateBackoff{Exponent: b.Exponent, BaseMs: b.BaseMs, JitterMs: b.JitterMs}
	}
	for _, b := range j.Budgets {
		tb := templateBinding{Key: b.Key, Cost: b.Cost}
		if c := b.CreateWith; c != nil {
			tb.CreateWith = &templateBudget{Allocation: c.Allocation, Strategy: c.Strategy, DurationMs: c.DurationMs, Burst: c.Burst}
		}
		t.Budgets = append(t.Budgets, tb)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // or "<" in a payload would come back as \u003c
	if err := enc.Encode(t); err != nil {
		return nil, fmt.Errorf("encode cron job template: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decodeTemplate reads a stored job template back.
func decodeTemplate(data []byte) (engine.NewJob, error) {
	var t cronTemplate
	if err := json.Unmarshal(data, &t); err != nil {
		return engine.NewJob{}, fmt.Errorf("decode cron job template: %w", err)
	}
	j := engine.NewJob{
		Type: t.Type, Queue: t.Queue, Priority: t.Priority, Payload: []byte(t.Payload),
		RetryLimit: t.RetryLimit, StartWithinMs: t.StartWithinMs,
	}
	if t.UniqueKey != "" {
		w, ok := store.ParseUniqueWhile(t.UniqueWhile)
		if !ok {
			return engine.NewJob{}, fmt.Errorf("decode cron job template: unique_while %q", t.UniqueWhile)
		}
		j.UniqueKey, j.UniqueWhile = t.UniqueKey, w
	}
	if b := t.Batch; b != nil {
		j.Batch = &store.BatchConfig{Key: b.Key, When: b.When, Fold: b.Fold}
	}
	if r := t.Retention; r != nil {
		j.Retention = &store.Retention{CompletedMs: r.CompletedMs, DeadMs: r.DeadMs}
	}
	if b := t.Backoff; b != nil {
		j.Backoff = &store.Backoff{Exponent: b.Exponent, BaseMs: b.BaseMs, JitterMs: b.JitterMs}
	}
	for _, b := range t.Budgets {
		spec := engine.BindingSpec{Key: b.Key, Cost: b.Cost}
		if c := b.CreateWith; c != nil {
			spec.CreateWith = &store.Budget{Allocation: c.Allocation, Strategy: c.Strategy, DurationMs: c.DurationMs, Burst: c.Burst}
		}
		j.Budgets = append(j.Budgets, spec)
	}
	return j, nil
}
