// Package batchexpr runs the jq programs of batched jobs: a batch's when
// decides whether a new enqueue folds into the batch's pending job, and its
// fold makes the merged payload, both over $existing (the pending job's
// payload) and $new (the incoming one), with null as input, as Zizq runs
// them.
//
// The programs come from clients and jq cannot be tamed from inside: one
// step can allocate gigabytes ("x" * 2e9, an array index of 2^29), a few
// steps can nest a value so deep that a recursive builtin overflows the
// goroutine stack, which kills the whole process. So the server never
// evaluates them itself: a Sandbox runs them in child processes (this
// binary, started again as a worker) with a memory limit, a deadline and a
// bound on how many run at once. A worker that dies or overruns is killed
// and replaced; the enqueue that caused it is refused.
package batchexpr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"time"

	"github.com/itchyny/gojq"
	"github.com/zizq/zizq/api"
)

// Config is a batch's pair of programs.
type Config struct {
	When string
	Fold string
}

// Stage is the step of a batched enqueue that a refusal comes from.
type Stage uint8

const (
	// StageExpression: when or fold does not compile.
	StageExpression Stage = iota + 1
	// StageDryRun: the new job's own programs fail on its own payload
	// (bound as both $existing and $new).
	StageDryRun
	// StageFold: folding the new payload into the pending job failed.
	StageFold
)

var stagePrefix = map[Stage]string{
	StageExpression: "batch expression: ",
	StageDryRun:     "batch dry-run: ",
	StageFold:       "batch fold failed: ",
}

// Error is a refusal of a batch's programs or payloads: the client's
// mistake (or its hostile program), never the server's.
type Error struct {
	Stage Stage
	Msg   string // e.g. `fold: fold expression produced more than one output`
}

func (e *Error) Error() string { return stagePrefix[e.Stage] + e.Msg }

func refuse(stage Stage, format string, args ...any) *Error {
	return &Error{Stage: stage, Msg: fmt.Sprintf(format, args...)}
}

// Limits bound one evaluation.
type Limits struct {
	// Timeout bounds the run of a task's programs (a context deadline,
	// checked at every jq instruction).
	Timeout time.Duration
	// MaxPayloadBytes bounds the inputs and the fold's output, as
	// --max-body-size bounds a payload sent by a client.
	MaxPayloadBytes int
}

// maxDepth bounds the nesting of a fold's output, as the payload decoder
// bounds that of a payload sent by a client.
const maxDepth = 10000

// Program is a compiled Config.
type Program struct {
	when, fold *gojq.Code
}

// Compile compiles both programs with $existing and $new declared. Nothing
// of the process leaks in: $ENV is empty, input and modules are refused.
func Compile(c Config) (*Program, error) {
	when, err := compileOne(c.When)
	if err != nil {
		return nil, refuse(StageExpression, "when: %v", err)
	}
	fold, err := compileOne(c.Fold)
	if err != nil {
		return nil, refuse(StageExpression, "fold: %v", err)
	}
	return &Program{when: when, fold: fold}, nil
}

func compileOne(src string) (*gojq.Code, error) {
	q, err := gojq.Parse(src)
	if err != nil {
		return nil, err
	}
	return gojq.Compile(q,
		gojq.WithVariables([]string{"$existing", "$new"}),
		gojq.WithEnvironLoader(func() []string { return nil }))
}

// DryRun runs both programs with payload bound as $existing and $new, so
// that a program that cannot work on the payload's shape is refused at
// enqueue instead of at the first fold: when must not fail, fold must give
// exactly one value that is a payload. The value of when is not looked at.
func (p *Program) DryRun(ctx context.Context, payload any, lim Limits) error {
	if _, err := runWhen(ctx, p.when, payload, payload, true, lim); err != nil {
		return refuse(StageDryRun, "when: %s", err)
	}
	if _, err := runFold(ctx, p.fold, payload, payload, lim); err != nil {
		return refuse(StageDryRun, "fold: %s", err)
	}
	return nil
}

// Fold runs when over existing and incoming; if it holds, it runs fold
// and returns the merged payload (canonical JSON). A when that fails at
// run time does not hold (the batch is sealed and a new one starts), as in
// Zizq; a limit it overruns is an error.
func (p *Program) Fold(ctx context.Context, existing, incoming any, lim Limits) (bool, []byte, error) {
	folds, err := runWhen(ctx, p.when, existing, incoming, false, lim)
	if err != nil {
		return false, nil, refuse(StageFold, "when: %s", err)
	}
	if !folds {
		return false, nil, nil
	}
	out, err := runFold(ctx, p.fold, existing, incoming, lim)
	if err != nil {
		return false, nil, refuse(StageFold, "%s", err)
	}
	return true, out, nil
}

// runWhen returns whether when's first value is truthy (neither false nor
// null). No value is false; a run-time error is false unless strict.
func runWhen(ctx context.Context, code *gojq.Code, existing, incoming any, strict bool, lim Limits) (bool, error) {
	it := code.RunWithContext(ctx, nil, existing, incoming)
	v, ok := it.Next()
	if !ok {
		return false, nil
	}
	if err, isErr := v.(error); isErr {
		if ctx.Err() != nil || strict {
			return false, runError(ctx, "expression", err, lim)
		}
		return false, nil
	}
	return v != nil && v != false, nil
}

// runFold returns fold's one value as canonical JSON.
func runFold(ctx context.Context, code *gojq.Code, existing, incoming any, lim Limits) ([]byte, error) {
	it := code.RunWithContext(ctx, nil, existing, incoming)
	v, ok := it.Next()
	if !ok {
		return nil, errors.New("fold expression produced no output")
	}
	if err, isErr := v.(error); isErr {
		return nil, runError(ctx, "fold expression", err, lim)
	}
	if extra, more := it.Next(); more {
		if err, isErr := extra.(error); isErr && ctx.Err() != nil {
			return nil, runError(ctx, "fold expression", err, lim)
		}
		return nil, errors.New("fold expression produced more than one output")
	}
	return encode(v, lim.MaxPayloadBytes)
}

// runError explains an error value of a run: the deadline, or the
// program's own failure.
func runError(ctx context.Context, what string, err error, lim Limits) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s took longer than %s", what, lim.Timeout)
	}
	return fmt.Errorf("%s failed at runtime: %v", what, err)
}

// Decode reads a payload (JSON) as jq values; numbers keep their digits.
func Decode(payload []byte) (any, error) {
	if len(payload) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	return v, nil
}

// encode renders a fold's value as a payload: canonical JSON of at most
// max bytes, nested at most maxDepth deep, every number finite. The size
// is checked before the value is written, so that a huge value (a sparse
// array of 2^29 nulls) is refused without being rendered.
func encode(v any, max int) ([]byte, error) {
	w := sizer{max: max, left: max}
	if err := w.check(v, 0); err != nil {
		return nil, err
	}
	raw, err := gojq.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	out, err := api.CanonicalJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	if len(out) > max {
		return nil, tooLarge(max)
	}
	return out, nil
}

func tooLarge(max int) error {
	return fmt.Errorf("fold output exceeds the %d-byte payload limit (--max-body-size)", max)
}

// sizer walks a value, counting at least the bytes each part takes once
// written (never more), and stops as soon as they exceed max.
type sizer struct{ max, left int }

func (w *sizer) take(n int) error {
	if w.left -= n; w.left < 0 {
		return tooLarge(w.max)
	}
	return nil
}

func (w *sizer) check(v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("fold output nests deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil, bool:
		return w.take(4)
	case int, json.Number:
		return w.take(1)
	case *big.Int:
		return w.take(x.BitLen()/4 + 1) // a decimal digit holds about 3.3 bits
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("floating-point value %v is not representable in JSON (NaN or Infinity)", x)
		}
		return w.take(1)
	case string:
		return w.take(len(x) + 2)
	case []any:
		if err := w.take(len(x) + 1); err != nil { // brackets and commas
			return err
		}
		for _, e := range x {
			if err := w.check(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if err := w.take(len(x)*2 + 1); err != nil { // braces, colons and commas
			return err
		}
		for k, e := range x {
			if err := w.take(len(k) + 2); err != nil {
				return err
			}
			if err := w.check(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("fold output holds a value of type %T", v)
}
