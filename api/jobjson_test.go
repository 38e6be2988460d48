package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzAppendJobJSON: whatever job appendJobJSON writes, the general
// encoder writes byte for byte.
func FuzzAppendJobJSON(f *testing.F) {
	f.Add("0abc", "send_email", "emails", uint16(32768), "ready", []byte(`{"a":1}`), uint64(1700000000000), uint32(1), uint64(0), uint64(5), "", "k", int64(2), uint8(0))
	f.Add("x\"y", "t", "q", uint16(0), "in_flight", []byte(nil), uint64(0), uint32(0), uint64(9), uint64(0), "u", "é", int64(-1), uint8(7))
	f.Add("0def", "t", "q", uint16(7), "completed", []byte(`{"b":[true,null]}`), uint64(3), uint32(2), uint64(9), uint64(8), "", "", int64(0), uint8(6))
	f.Add("id", "t<>&", "q", uint16(1), "dead", []byte(`[1,"x"]`), uint64(1), uint32(3), uint64(1), uint64(2), "key", "", int64(0), uint8(3))
	f.Fuzz(func(t *testing.T, id, typ, queue string, prio uint16, status string, payload []byte,
		readyAt uint64, attempts uint32, dequeued, failed uint64, unique, budget string, cost int64, flags uint8) {
		p, err := CanonicalJSON(payload)
		if len(payload) > 0 && err != nil {
			return // payloads are canonical JSON or empty
		}
		j := Job{ID: id, Type: typ, Queue: queue, Priority: prio, Status: status, Payload: p,
			ReadyAt: readyAt, Attempts: attempts, DequeuedAt: dequeued, FailedAt: failed,
			UniqueKey: unique, PurgeAt: failed / 2, CompletedAt: dequeued / 3, StartBy: readyAt / 5}
		if unique != "" {
			j.UniqueWhile = "queued"
		}
		if flags&1 != 0 {
			j.Budgets = []Binding{{Key: budget, Cost: cost}, {Key: "b", Cost: 1}}
		}
		if flags&2 != 0 {
			j.RetryLimit = Ptr(attempts)
		}
		if flags&4 != 0 {
			j.Duplicate, j.Folded = Ptr(true), Ptr(false)
		}
		if flags&8 != 0 {
			j.Backoff = &Backoff{Exponent: 1.5, BaseMs: 2, JitterMs: 3}
		}
		fast, ok := appendJobJSON(nil, &j)
		if !ok {
			require.Empty(t, fast, "nothing appended when it declines")
			return
		}
		general, err := appendJSON(nil, j)
		require.NoError(t, err)
		require.Equal(t, string(general), string(fast))

		bulk := BulkJobs{Jobs: []Job{j, {ID: "0b", Type: "t", Queue: "q", Status: "ready"}, j}}
		fast, err = Marshal(JSON, bulk)
		require.NoError(t, err)
		general, err = appendJSON(nil, bulk)
		require.NoError(t, err)
		require.Equal(t, string(general), string(fast), "a bulk enqueue's answer")
	})
}

// TestMarshal_BulkJobs: the answer to a bulk enqueue is what the general
// encoder writes, for an empty, a nil and a declined list too.
func TestMarshal_BulkJobs(t *testing.T) {
	t.Parallel()
	plain := Job{ID: "0a", Type: "t", Queue: "q", Priority: 32768, Status: "ready", ReadyAt: 5}
	for name, b := range map[string]BulkJobs{
		"Empty":       {Jobs: []Job{}},
		"Nil":         {},
		"Plain":       {Jobs: []Job{plain, plain}},
		"OneDeclines": {Jobs: []Job{plain, {ID: "a\"b"}, plain}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			general, err := appendJSON(nil, b)
			require.NoError(t, err)
			for _, v := range []any{b, &b} {
				got, err := Marshal(JSON, v)
				require.NoError(t, err)
				require.Equal(t, string(general), string(got))
			}
		})
	}
}

func TestAppendJobJSON_Declines(t *testing.T) {
	t.Parallel()
	for name, j := range map[string]Job{
		"Escape":    {ID: "a\"b"},
		"NonASCII":  {Type: "é"},
		"Control":   {Queue: "a\nb"},
		"Budget":    {Budgets: []Binding{{Key: "x\\y"}}},
		"Backoff":   {Backoff: &Backoff{}},
		"Retention": {Retention: &Retention{}},
		"Batch":     {Batch: &Batch{}},
		"Invalid":   {Payload: Payload("{")},
		"Float":     {Payload: Payload("1.5")},
	} {
		_, ok := appendJobJSON(nil, &j)
		require.False(t, ok, name)
	}
}
