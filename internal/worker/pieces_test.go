package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
)

func TestPrefixWriter_Write(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	sink := newLineSink(&out)
	a, b := sink.writer("a"), sink.writer("b")
	_, _ = a.Write([]byte("one\ntw"))
	_, _ = b.Write([]byte("x\n"))
	_, _ = a.Write([]byte("o\n\nthree"))
	a.flush()
	b.flush()
	require.Equal(t, "a: one\nb: x\na: two\na: \na: three\n", out.String(), "whole lines, never mixed")

	t.Run("LongLine", func(t *testing.T) {
		var out bytes.Buffer
		w := newLineSink(&out).writer("id")
		_, _ = w.Write(bytes.Repeat([]byte("x"), maxLine))
		require.Equal(t, len("id: ")+maxLine+1, out.Len(), "written out without a newline once maxLine long")
		_, _ = w.Write([]byte("y"))
		w.flush()
		require.True(t, strings.HasSuffix(out.String(), "x\nid: y\n"))
	})
}

func TestTailBuffer_Bytes(t *testing.T) {
	t.Parallel()
	tb := &tailBuffer{max: 8}
	_, _ = tb.Write([]byte("0123"))
	_, _ = tb.Write([]byte("456789ab"))
	require.Equal(t, "456789ab", string(tb.bytes()))

	// "é" is two bytes: a tail that starts inside it drops the half.
	tb = &tailBuffer{max: 4}
	_, _ = tb.Write([]byte("xéabc"))
	require.Equal(t, "abc", string(tb.bytes()))
}

func TestLoop_Verdict(t *testing.T) {
	t.Parallel()
	l := &loop{cfg: Config{Timeout: 1500 * time.Millisecond}}
	tail := []byte("boom\n")
	for _, tc := range []struct {
		name    string
		out     outcome
		kind    string
		message string
	}{
		{"Success", outcome{pid: 1, exitCode: 0}, EventSucceeded, ""},
		{"ExitStatus", outcome{pid: 1, exitCode: 3, tail: tail}, EventFailed, "exit status 3"},
		{"Signal", outcome{pid: 1, exitCode: -1, signal: "SIGSEGV", tail: tail}, EventFailed, "killed by SIGSEGV"},
		{"TimedOut", outcome{pid: 1, exitCode: -1, signal: "SIGKILL", timedOut: true}, EventTimedOut, "timed out after 1.5s"},
		{"Stopped", outcome{pid: 1, exitCode: -1, signal: "SIGKILL", stopped: true, timedOut: true}, EventFailed, "worker stopped"},
		{"NotStarted", outcome{exitCode: -1, startErr: errors.New(`exec: "nosuch": executable file not found in $PATH`)}, EventFailed, `exec: "nosuch": executable file not found in $PATH`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, fail := l.verdict(tc.out)
			require.Equal(t, tc.kind, ev.Kind)
			require.Equal(t, tc.message, ev.Message)
			if tc.kind == EventSucceeded {
				require.Nil(t, fail)
				return
			}
			require.Equal(t, tc.message, *fail.Message)
			if len(tc.out.tail) > 0 {
				require.Equal(t, string(tail), *fail.Backtrace)
			} else {
				require.Nil(t, fail.Backtrace)
			}
		})
	}
}

func TestStart_NoSuchCommand(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p, failed := start(spec{argv: []string{"zizq-no-such-command"}, out: newLineSink(&out), prefix: "id"})
	require.Nil(t, p)
	require.Equal(t, `exec: "zizq-no-such-command": executable file not found in $PATH`, failed.startErr.Error())
}

// at is a fixed instant in a zone with an offset, as the text lines show
// local time.
var at = time.Date(2026, 8, 31, 19, 16, 28, 5e6, time.FixedZone("AEST", 10*3600))

func TestTextEvents(t *testing.T) {
	t.Parallel()
	job := Event{Time: at, ID: "03gs5tvn78uny555dm88vjsoj", PID: 3098324}
	for _, tc := range []struct {
		name string
		edit func(*Event)
		want string
	}{
		{"Started", func(e *Event) { e.Kind = EventStarted }, "Job 03gs5tvn78uny555dm88vjsoj running in process 3098324"},
		{"Succeeded", func(e *Event) { e.Kind = EventSucceeded }, "Job 03gs5tvn78uny555dm88vjsoj exited with status 0"},
		{"Failed", func(e *Event) { e.Kind, e.Status = EventFailed, 2 }, "Job 03gs5tvn78uny555dm88vjsoj exited with status 2"},
		{"Signal", func(e *Event) { e.Kind, e.Status, e.Signal = EventFailed, -1, "SIGSEGV" }, "Job 03gs5tvn78uny555dm88vjsoj killed by SIGSEGV"},
		{"Stopped", func(e *Event) { e.Kind, e.Status, e.Signal, e.Message = EventFailed, -1, "SIGKILL", msgStopped }, "Job 03gs5tvn78uny555dm88vjsoj killed: worker stopped"},
		{"TimedOut", func(e *Event) {
			e.Kind, e.Status, e.Signal, e.Message = EventTimedOut, -1, "SIGKILL", "timed out after 5s"
		}, "Job 03gs5tvn78uny555dm88vjsoj timed out after 5s, killed by SIGKILL"},
		{"NotStarted", func(e *Event) { e.Kind, e.PID, e.Message = EventFailed, 0, "exec: nope" }, "Job 03gs5tvn78uny555dm88vjsoj could not start: exec: nope"},
		{"Stopping", func(e *Event) { *e = Event{Time: at, Kind: EventStopping, Signal: "SIGTERM", Running: 3} },
			"SIGTERM received. Stopping: 3 running jobs may finish within 30s, nothing new starts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := job
			tc.edit(&e)
			TextEvents(&out, 30*time.Second).Event(e)
			require.Equal(t, "2026-08-31T19:16:28+10:00: "+tc.want+"\n", out.String())
		})
	}
}

// TestJSONEvents pins the schema scripts parse.
func TestJSONEvents(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	sink := JSONEvents(&out)
	base := Event{Time: at, ID: "03gs5tvn78uny555dm88vjsoj", Type: "resize", Queue: "images", PID: 42}
	started, done, failed, stop := base, base, base, Event{Time: at, Kind: EventStopping, Signal: "SIGINT", Running: 2}
	started.Kind, started.Attempts = EventStarted, 1
	done.Kind, done.Duration = EventSucceeded, 1234*time.Millisecond
	done.Budgets = []api.Settle{{Key: "openai-tpm", Cost: api.Ptr[int64](1834)}}
	failed.Warning = "result file ignored: budgets must be an array"
	failed.Kind, failed.Status, failed.Signal, failed.Message, failed.Duration = EventFailed, -1, "SIGKILL", "killed by SIGKILL", time.Second
	for _, e := range []Event{started, done, failed, stop} {
		sink.Event(e)
	}
	want := []string{
		`{"time":"2026-08-31T19:16:28.005+10:00","event":"started","id":"03gs5tvn78uny555dm88vjsoj","type":"resize","queue":"images","attempts":1,"pid":42}`,
		`{"time":"2026-08-31T19:16:28.005+10:00","event":"succeeded","id":"03gs5tvn78uny555dm88vjsoj","type":"resize","queue":"images","pid":42,"status":0,"duration_ms":1234,"budgets":[{"key":"openai-tpm","cost":1834}]}`,
		`{"time":"2026-08-31T19:16:28.005+10:00","event":"failed","id":"03gs5tvn78uny555dm88vjsoj","type":"resize","queue":"images","pid":42,"signal":"SIGKILL","message":"killed by SIGKILL","duration_ms":1000,"warning":"result file ignored: budgets must be an array"}`,
		`{"time":"2026-08-31T19:16:28.005+10:00","event":"stopping","signal":"SIGINT","running":2}`,
	}
	require.Equal(t, strings.Join(want, "\n")+"\n", out.String())
	for _, l := range want {
		require.True(t, json.Valid([]byte(l)))
	}
}
