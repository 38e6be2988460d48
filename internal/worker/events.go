package worker

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/zizq/zizq/api"
)

// Event kinds. Every job that starts ends with exactly one of succeeded,
// failed or timed_out; stopping is the worker's own.
const (
	EventStarted   = "started"
	EventSucceeded = "succeeded"
	EventFailed    = "failed"
	EventTimedOut  = "timed_out"
	EventStopping  = "stopping"
)

// Event is one thing that happened to a job, or to the worker (stopping).
type Event struct {
	Time time.Time
	Kind string
	// ID, Type, Queue and Attempts are the job's (none on stopping).
	ID, Type, Queue string
	Attempts        uint32
	// PID is the command's process ID; 0 when it did not start.
	PID int
	// Status is the exit status; -1 when a signal ended the command or it
	// did not start.
	Status int
	// Signal names the signal that ended the command (SIGKILL), if any;
	// on stopping, the signal that stops the worker, if any.
	Signal string
	// Message is what the failure report says (failed, timed_out).
	Message  string
	Duration time.Duration
	// Running is how many commands still run (stopping).
	Running int
	// Budgets are the real costs the command wrote in its result file
	// (succeeded, failed, timed_out); Throttle is the refusal it
	// reported (failed, with exit status 75); Warning says why that file,
	// or its throttle, was ignored, when it was.
	Budgets  []api.Settle
	Throttle *api.Throttle
	Warning  string
}

// EventSink receives the worker's events, one at a time.
type EventSink interface{ Event(Event) }

// textTime is the time of a text line: local time with its offset, to the
// second.
const textTime = "2006-01-02T15:04:05Z07:00"

// TextEvents writes one line an event, in the words of the original
// design's forking worker: "<time>: Job <id> running in process <pid>".
func TextEvents(w io.Writer, grace time.Duration) EventSink {
	return &textSink{w: w, grace: grace}
}

type textSink struct {
	mu    sync.Mutex
	w     io.Writer
	grace time.Duration
}

func (s *textSink) Event(e Event) {
	var what string
	switch e.Kind {
	case EventStarted:
		what = fmt.Sprintf("Job %s running in process %d", e.ID, e.PID)
	case EventSucceeded:
		what = fmt.Sprintf("Job %s exited with status 0", e.ID)
	case EventFailed, EventTimedOut:
		what = fmt.Sprintf("Job %s %s%s", e.ID, endedHow(e), throttled(e.Throttle))
	case EventStopping:
		what = fmt.Sprintf("Stopping: %d running %s may finish within %s, nothing new starts", e.Running, plural(e.Running, "job", "jobs"), s.grace)
		if e.Signal != "" {
			what = fmt.Sprintf("%s received. %s", e.Signal, what)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "%s: %s\n", e.Time.Format(textTime), what)
}

// endedHow says how a failed job's command ended.
func endedHow(e Event) string {
	switch {
	case e.PID == 0:
		return "could not start: " + e.Message
	case e.Kind == EventTimedOut && e.Signal != "":
		return fmt.Sprintf("%s, killed by %s", e.Message, e.Signal)
	case e.Kind == EventTimedOut:
		return fmt.Sprintf("%s, exited with status %d", e.Message, e.Status)
	case e.Message == msgStopped:
		return "killed: " + msgStopped
	case e.Signal != "":
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exited with status %d", e.Status)
}

// throttled says which budget a failure throttles, and for how long it
// is to pay nothing: ", throttling budget 'api' (retry after 30s)".
func throttled(t *api.Throttle) string {
	if t == nil || t.Budget == nil {
		return ""
	}
	out := fmt.Sprintf(", throttling budget '%s'", *t.Budget)
	if t.RetryAfterMs != nil && *t.RetryAfterMs > 0 {
		out += fmt.Sprintf(" (retry after %s)", time.Duration(*t.RetryAfterMs)*time.Millisecond)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// JSONEvents writes one JSON object a line an event (the schema is
// jsonEvent's).
func JSONEvents(w io.Writer) EventSink { return &jsonSink{enc: json.NewEncoder(w)} }

type jsonSink struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// jsonEvent is the stable schema of -o json; fields that do not apply to
// an event are left out.
type jsonEvent struct {
	Time       string        `json:"time"`
	Event      string        `json:"event"`
	ID         string        `json:"id,omitempty"`
	Type       string        `json:"type,omitempty"`
	Queue      string        `json:"queue,omitempty"`
	Attempts   *uint32       `json:"attempts,omitempty"`
	PID        int           `json:"pid,omitempty"`
	Status     *int          `json:"status,omitempty"`
	Signal     string        `json:"signal,omitempty"`
	Message    string        `json:"message,omitempty"`
	DurationMs *int64        `json:"duration_ms,omitempty"`
	Running    *int          `json:"running,omitempty"`
	Budgets    []api.Settle  `json:"budgets,omitempty"`
	Throttle   *api.Throttle `json:"throttle,omitempty"`
	Warning    string        `json:"warning,omitempty"`
}

func (s *jsonSink) Event(e Event) {
	j := jsonEvent{Time: e.Time.Format(time.RFC3339Nano), Event: e.Kind, ID: e.ID, Type: e.Type, Queue: e.Queue, PID: e.PID, Signal: e.Signal, Message: e.Message,
		Budgets: e.Budgets, Throttle: e.Throttle, Warning: e.Warning}
	switch e.Kind {
	case EventStarted:
		j.Attempts = &e.Attempts
	case EventStopping:
		j.Running = &e.Running
	default:
		if e.Status >= 0 {
			j.Status = &e.Status
		}
		ms := e.Duration.Milliseconds()
		j.DurationMs = &ms
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.enc.Encode(j)
}
