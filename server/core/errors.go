package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/zizq/zizq/server/engine"
	"github.com/zizq/zizq/store"
)

// Kind classifies the core's refusals; a transport maps each to its own
// status (the HTTP API: 404, 409, 422, 400, 503).
type Kind uint8

const (
	// KindNotFound: the job, error record or budget does not exist.
	KindNotFound Kind = iota + 1
	// KindConflict: the request clashes with existing state.
	KindConflict
	// KindUnprocessable: a valid request that the current state refuses.
	KindUnprocessable
	// KindInvalid: the request itself is wrong, whatever the state.
	KindInvalid
	// KindUnavailable: the store cannot write (disk full, read-only).
	KindUnavailable
	// KindStarting: the service is still loading its state.
	KindStarting
	// KindBusy: the service has no room for the request now (the batch
	// sandbox's queue is full); the same request may succeed shortly.
	KindBusy
)

// Error is a refusal with a message meant for the client.
type Error struct {
	Kind Kind
	Msg  string
	// Item is the index of the offending job in a bulk request, or -1.
	Item int
	err  error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrNotFound) (and the other kinds) hold for
// every Error of that kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Kind == e.Kind
}

// Sentinels, one per kind, for errors.Is.
var (
	ErrNotFound      = &Error{Kind: KindNotFound}
	ErrConflict      = &Error{Kind: KindConflict}
	ErrUnprocessable = &Error{Kind: KindUnprocessable}
	ErrInvalid       = &Error{Kind: KindInvalid}
	ErrUnavailable   = &Error{Kind: KindUnavailable}
	ErrStarting      = &Error{Kind: KindStarting}
	ErrBusy          = &Error{Kind: KindBusy}
)

// ErrLeaseLost is a take's refusal once the service may have lost its
// cluster lease: another server may lead and hand the same jobs out.
var ErrLeaseLost = &Error{Kind: KindUnavailable, Msg: "the cluster lease may be lost: this server hands out no more jobs", Item: -1}

func refuse(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Item: -1}
}

// NotFound, Unprocessable and Invalid build refusals of those kinds (for
// the transports' own checks too).
func NotFound(format string, args ...any) error { return refuse(KindNotFound, format, args...) }
func Unprocessable(format string, args ...any) error {
	return refuse(KindUnprocessable, format, args...)
}
func Invalid(format string, args ...any) error { return refuse(KindInvalid, format, args...) }

// translate turns the engine's and the store's errors into the core's.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var ee *engine.Error
	if errors.As(err, &ee) {
		kinds := map[engine.ErrorKind]Kind{engine.NotFound: KindNotFound, engine.Conflict: KindConflict, engine.Invalid: KindInvalid}
		kind, ok := kinds[ee.Kind]
		if !ok {
			kind = KindUnprocessable
		}
		return &Error{Kind: kind, Msg: ee.Msg, Item: ee.Item, err: err}
	}
	if errors.Is(err, store.ErrUnavailable) {
		return &Error{Kind: KindUnavailable, Msg: err.Error(), Item: -1, err: err}
	}
	return err
}

// wait blocks until journalled changes are durable. The request's own
// cancellation does not stop it: the answer must say what happened.
func wait(ctx context.Context, w engine.Waiter) error {
	if w == nil {
		return nil
	}
	return translate(w.Wait(context.WithoutCancel(ctx)))
}
