package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
	"github.com/zizq/zizq/server/clock"
	"github.com/zizq/zizq/server/servertest"
	"github.com/zizq/zizq/store"
	"github.com/zizq/zizq/store/sqlite"
)

// cronStart is the fake clock's start in cron tests: mid-minute, so that
// the next occurrence of "* * * * *" is 30 s away.
var cronStart = time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)

// cronBundle is a server on a fake clock, spoken to in one body format.
type cronBundle struct {
	*testBundle
	clk    *clock.Fake
	format api.Format
	tune   []func(*server.Options) // the clock's first; a restart keeps them
}

func setupCron(t *testing.T, f api.Format, tune ...func(*server.Options)) *cronBundle {
	t.Helper()
	clk := clock.NewFake(cronStart)
	tune = append([]func(*server.Options){func(o *server.Options) { o.Clock = clk }}, tune...)
	return &cronBundle{testBundle: setup(t, tune...), clk: clk, format: f, tune: tune}
}

// restart stops the server and starts it again on its data, with the same
// fake clock.
func (c *cronBundle) restart(t *testing.T) {
	t.Helper()
	c.stop()
	c.testBundle = setupIn(t, c.dir, c.tune...)
}

// call sends body (a JSON text, converted to MessagePack when the bundle
// speaks it) and requires the status; the answer is decoded into out.
func (c *cronBundle) call(t *testing.T, method, path, body string, status int, out any) reply {
	t.Helper()
	var header []string
	var send any
	if body != "" {
		send = body
		if c.format == api.MsgPack {
			send = jsonToMsgpack(t, body)
			header = append(header, "Content-Type", api.MediaMsgPack)
		}
	}
	if c.format == api.MsgPack {
		header = append(header, "Accept", api.MediaMsgPack)
	}
	r := c.req(t, method, path, send, header...)
	require.Equal(t, status, r.status, "%s %s: %s", method, path, r.body)
	if status == http.StatusNoContent {
		require.Empty(t, r.body)
		return r
	}
	require.Equal(t, api.ContentType(c.format), r.header.Get("Content-Type"))
	if out != nil {
		// Decoding into a used value would keep what the answer omits.
		reflect.ValueOf(out).Elem().SetZero()
		require.NoError(t, api.Unmarshal(c.format, r.body, out), "body: %q", r.body)
	}
	return r
}

// fails requires an error status and message.
func (c *cronBundle) fails(t *testing.T, method, path, body string, status int, msg string) {
	t.Helper()
	var e api.Error
	c.call(t, method, path, body, status, &e)
	require.Equal(t, msg, e.Error)
}

func (c *cronBundle) group(t *testing.T, name string) api.CronGroup {
	t.Helper()
	var g api.CronGroup
	c.call(t, "GET", "/crons/"+name, "", http.StatusOK, &g)
	return g
}

func (c *cronBundle) entry(t *testing.T, group, name string) api.CronEntry {
	t.Helper()
	var e api.CronEntry
	c.call(t, "GET", "/crons/"+group+"/entries/"+name, "", http.StatusOK, &e)
	return e
}

// fireAt moves the clock to at and waits until the entry has fired there
// (its last_enqueue_at is at) or, when it enqueues nothing, until its next
// occurrence has moved past at.
func (c *cronBundle) fireAt(t *testing.T, group, name string, at uint64) api.CronEntry {
	t.Helper()
	c.clk.AdvanceTo(time.UnixMilli(int64(at)))
	var e api.CronEntry
	require.Eventually(t, func() bool {
		e = c.entry(t, group, name)
		return e.LastEnqueueAt == at || e.NextEnqueueAt > at || e.NextEnqueueAt == 0
	}, 10*time.Second, 5*time.Millisecond, "entry %s/%s did not fire at %d", group, name, at)
	return e
}

func (c *cronBundle) jobs(t *testing.T, queue string) []api.Job {
	t.Helper()
	return listJobs(t, c.testBundle, "/jobs?queue="+queue).Jobs
}

// jsonToMsgpack re-encodes a JSON text as MessagePack, integers as
// integers.
func jsonToMsgpack(t *testing.T, s string) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	b, err := msgpack.Marshal(numbers(v))
	require.NoError(t, err)
	return b
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(x.String(), 10, 64); err == nil {
			return u
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

func ms(t time.Time) uint64 { return uint64(t.UnixMilli()) }

const cronEntryBody = `{"name":"%s","expression":"%s","job":{"type":"t","queue":"q","payload":{"n":1}}}`

func TestCron_GroupLifecycle(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f api.Format) {
		c := setupCron(t, f)
		var list api.CronList
		c.call(t, "GET", "/crons", "", http.StatusOK, &list)
		require.Equal(t, []string{}, list.Crons)

		var g api.CronGroup
		c.call(t, "PUT", "/crons/nightly", `{"entries":[
			{"name":"b","expression":"0 3 * * *","timezone":"UTC","job":{"type":"report","queue":"ops","payload":{"z":1,"a":[true,null]},"priority":7,
			 "retry_limit":2,"backoff":{"exponent":1.5,"base_ms":10,"jitter_ms":0},"retention":{"dead_ms":60000}}},
			{"name":"a","expression":"* * * * *","job":{"type":"t","queue":"q","payload":null}}]}`, http.StatusOK, &g)
		require.Equal(t, "nightly", g.Name)
		require.False(t, g.Paused)
		require.Zero(t, g.PausedAt)
		require.Equal(t, []string{"a", "b"}, cronNames(g), "entries by name")
		b := g.Entries[1]
		require.Equal(t, "0 3 * * *", b.Expression)
		require.Equal(t, "UTC", b.Timezone)
		require.Equal(t, ms(time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)), b.NextEnqueueAt)
		require.Zero(t, b.LastEnqueueAt)
		require.Equal(t, "report", *b.Job.Type)
		require.Equal(t, uint16(7), *b.Job.Priority)
		require.Equal(t, `{"a":[true,null],"z":1}`, string(b.Job.Payload))
		require.Equal(t, uint32(2), *b.Job.RetryLimit)
		require.Equal(t, float32(1.5), *b.Job.Backoff.Exponent)
		require.Equal(t, uint64(60000), *b.Job.Retention.DeadMs)
		require.Nil(t, b.Job.ReadyAt)
		a := g.Entries[0]
		require.Empty(t, a.Timezone, "no timezone: the server's local zone, and none echoed")
		require.Equal(t, uint16(api.DefaultPriority), *a.Job.Priority, "priority is materialised")
		require.Equal(t, "null", string(a.Job.Payload), "payload is always echoed")
		require.Equal(t, ms(cronStart.Truncate(time.Minute).Add(time.Minute)), a.NextEnqueueAt)

		require.Equal(t, g, c.group(t, "nightly"))
		require.Equal(t, b, c.entry(t, "nightly", "b"))

		// Pause and resume stamp paused_at and resumed_at (not backwards,
		// as the docs have it); asking for the state it has changes nothing.
		c.clk.Advance(time.Second)
		c.call(t, "PATCH", "/crons/nightly", `{"paused":true}`, http.StatusOK, &g)
		pausedAt := ms(c.clk.Now())
		require.True(t, g.Paused)
		require.Equal(t, pausedAt, g.PausedAt)
		require.Zero(t, g.ResumedAt)
		c.clk.Advance(time.Second)
		c.call(t, "PATCH", "/crons/nightly", `{"paused":true}`, http.StatusOK, &g)
		require.Equal(t, pausedAt, g.PausedAt)
		c.call(t, "PATCH", "/crons/nightly", `{"paused":false}`, http.StatusOK, &g)
		require.False(t, g.Paused)
		require.Equal(t, pausedAt, g.PausedAt, "paused_at is kept")
		require.Equal(t, ms(c.clk.Now()), g.ResumedAt)
		require.Len(t, g.Entries, 2, "PATCH answers the whole group")

		var e api.CronEntry
		c.call(t, "PATCH", "/crons/nightly/entries/a", `{"paused":true}`, http.StatusOK, &e)
		require.True(t, e.Paused)
		require.Equal(t, ms(c.clk.Now()), e.PausedAt)
		c.call(t, "PATCH", "/crons/nightly/entries/a", `{"paused":false}`, http.StatusOK, &e)
		require.False(t, e.Paused)
		require.Equal(t, ms(c.clk.Now()), e.ResumedAt)

		// POST adds an entry (201), and a second time is a conflict.
		c.call(t, "POST", "/crons/nightly/entries", fmt.Sprintf(cronEntryBody, "c", "*/5 * * * *"), http.StatusCreated, &e)
		require.Equal(t, "c", e.Name)
		c.fails(t, "POST", "/crons/nightly/entries", fmt.Sprintf(cronEntryBody, "c", "* * * * *"), http.StatusConflict,
			"cron entry 'c' already exists in group 'nightly'")
		// POST and PUT of an entry create its group.
		c.call(t, "POST", "/crons/adhoc/entries", fmt.Sprintf(cronEntryBody, "x", "* * * * *"), http.StatusCreated, &e)
		c.call(t, "PUT", "/crons/other/entries/y", fmt.Sprintf(cronEntryBody, "ignored", "* * * * *"), http.StatusOK, &e)
		require.Equal(t, "y", e.Name, "the URL's name wins")
		require.Equal(t, []string{"y"}, cronNames(c.group(t, "other")))
		c.call(t, "GET", "/crons", "", http.StatusOK, &list)
		require.Equal(t, []string{"adhoc", "nightly", "other"}, list.Crons)

		c.call(t, "DELETE", "/crons/nightly/entries/c", "", http.StatusNoContent, nil)
		c.fails(t, "DELETE", "/crons/nightly/entries/c", "", http.StatusNotFound, "cron entry 'c' not found in group 'nightly'")
		c.fails(t, "GET", "/crons/nightly/entries/c", "", http.StatusNotFound, "cron entry 'c' not found in group 'nightly'")
		c.fails(t, "GET", "/crons/nope/entries/c", "", http.StatusNotFound, "cron entry 'c' not found in group 'nope'")
		c.fails(t, "PATCH", "/crons/nope", `{"paused":true}`, http.StatusNotFound, "cron group 'nope' not found")
		c.call(t, "DELETE", "/crons/other/entries/y", "", http.StatusNoContent, nil)
		require.Empty(t, c.group(t, "other").Entries, "deleting the last entry keeps the group")

		c.call(t, "DELETE", "/crons/adhoc", "", http.StatusNoContent, nil)
		c.fails(t, "DELETE", "/crons/adhoc", "", http.StatusNotFound, "cron group 'adhoc' not found")
		c.fails(t, "GET", "/crons/adhoc", "", http.StatusNotFound, "cron group 'adhoc' not found")
		var del api.Deleted
		c.call(t, "DELETE", "/crons", "", http.StatusOK, &del)
		require.Equal(t, int64(2), del.Deleted)
		c.call(t, "DELETE", "/crons", "", http.StatusOK, &del)
		require.Zero(t, del.Deleted)
		c.call(t, "GET", "/crons", "", http.StatusOK, &list)
		require.Empty(t, list.Crons)
	})
}

// TestCron_WireShape pins the exact bytes of a group: field names and
// omissions as Zizq renders them, budgets echoed with create_with.
func TestCron_WireShape(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	c.budPut(t, "w", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	r := c.call(t, "PUT", "/crons/g", `{"paused":true,"entries":[{"name":"e","expression":"0 9 * * MON","timezone":"Australia/Melbourne",
		"job":{"type":"t","queue":"q","payload":{"b":2,"a":"<&>"},"budgets":[{"key":"img","create_with":{"allocation":5,"strategy":{"type":"time_based","duration_ms":60000}}},{"key":"w","cost":2}]}}]}`, http.StatusOK, nil)
	next := ms(time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)) // Monday 9:00 in Melbourne (UTC+11)
	want := fmt.Sprintf(`{"name":"g","paused":true,"paused_at":%d,"entries":[{"name":"e","expression":"0 9 * * MON","timezone":"Australia/Melbourne","paused":false,`+
		`"job":{"type":"t","queue":"q","payload":{"a":"<&>","b":2},"priority":32768,"budgets":[{"key":"img","cost":1,"create_with":{"allocation":5,"strategy":{"type":"time_based","duration_ms":60000}}},{"key":"w","cost":2}]},`+
		`"next_enqueue_at":%d}]}`, ms(cronStart), next)
	require.JSONEq(t, want, string(r.body))
	require.Contains(t, string(r.body), `"a":"<&>"`, "payloads are not HTML-escaped")
	// The template survives a restart byte for byte.
	c.restart(t)
	r2 := c.call(t, "GET", "/crons/g", "", http.StatusOK, nil)
	require.Equal(t, string(r.body), string(r2.body))
}

func TestCron_PutMerges(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	put := func(body string) api.CronGroup {
		var g api.CronGroup
		c.call(t, "PUT", "/crons/g", body, http.StatusOK, &g)
		return g
	}
	put(`{"entries":[` + fmt.Sprintf(cronEntryBody, "keep", "* * * * *") + `,` + fmt.Sprintf(cronEntryBody, "change", "*/2 * * * *") + `,` +
		fmt.Sprintf(cronEntryBody, "drop", "* * * * *") + `]}`)
	first := ms(cronStart.Truncate(time.Minute).Add(time.Minute))
	c.fireAt(t, "g", "keep", first)
	keep := c.entry(t, "g", "keep")
	require.Equal(t, first, keep.LastEnqueueAt)
	c.clk.Advance(10 * time.Second)

	g := put(`{"entries":[
		{"name":"keep","expression":"* * * * *","job":{"type":"other","queue":"q","payload":{"n":2}}},
		{"name":"change","expression":"*/3 * * * *","job":{"type":"t","queue":"q","payload":{"n":1}}}]}`)
	require.Equal(t, []string{"change", "keep"}, cronNames(g), "entries absent from the body are deleted")
	require.Equal(t, keep.NextEnqueueAt, g.Entries[1].NextEnqueueAt, "a template-only change keeps the schedule")
	require.Equal(t, keep.LastEnqueueAt, g.Entries[1].LastEnqueueAt)
	require.Equal(t, "other", *g.Entries[1].Job.Type)
	require.Equal(t, ms(time.Date(2026, 3, 1, 12, 3, 0, 0, time.UTC)), g.Entries[0].NextEnqueueAt, "a changed expression is recomputed from now")

	// Paused absent keeps each state; an empty list keeps an empty group.
	c.call(t, "PATCH", "/crons/g/entries/keep", `{"paused":true}`, http.StatusOK, nil)
	c.call(t, "PATCH", "/crons/g", `{"paused":true}`, http.StatusOK, nil)
	g = put(`{"entries":[` + fmt.Sprintf(cronEntryBody, "keep", "* * * * *") + `]}`)
	require.True(t, g.Paused)
	require.True(t, g.Entries[0].Paused)
	g = put(`{"paused":false,"entries":[{"name":"keep","expression":"* * * * *","paused":false,"job":{"type":"t","queue":"q","payload":{}}}]}`)
	require.False(t, g.Paused)
	require.NotZero(t, g.ResumedAt)
	require.False(t, g.Entries[0].Paused)
	require.Equal(t, ms(c.clk.Now()), g.Entries[0].ResumedAt)
	g = put(`{"entries":[]}`)
	require.Empty(t, g.Entries)
	require.Equal(t, g, c.group(t, "g"))
	// A new group created paused says since when; a new entry does not
	// (as Zizq does).
	c.call(t, "PUT", "/crons/p", `{"paused":true,"entries":[{"name":"e","expression":"* * * * *","paused":true,"job":{"type":"t","queue":"q","payload":1}}]}`, http.StatusOK, &g)
	require.Equal(t, ms(c.clk.Now()), g.PausedAt)
	require.True(t, g.Entries[0].Paused)
	require.Zero(t, g.Entries[0].PausedAt)
}

func TestCron_BadInput(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	job := `"job":{"type":"t","queue":"q","payload":{}}`
	for _, tc := range []struct {
		name, method, path, body, msg string
	}{
		{"BadExpression", "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"61 * * * *",` + job + `}]}`, `entries[0] "e": invalid cron expression: end of range (61) above maximum (59): 61`},
		{"SevenFields", "POST", "/crons/g/entries", `{"name":"e","expression":"* * * * * * *",` + job + `}`, "invalid cron expression: expected 5 to 6 fields, found 7: [* * * * * * *]"},
		{"EmptyExpression", "PUT", "/crons/g/entries/e", `{"name":"e","expression":"",` + job + `}`, "invalid cron expression: empty spec string"},
		{"TimezonePrefix", "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"TZ=UTC",` + job + `}]}`, `entries[0] "e": invalid cron expression: a timezone prefix is not supported: use the entry's timezone`},
		{"BadTimezone", "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"* * * * *","timezone":"Mars/Olympus",` + job + `}]}`, `entries[0] "e": invalid timezone: "Mars/Olympus"`},
		{"LocalIsNoTimezone", "POST", "/crons/g/entries", `{"name":"e","expression":"* * * * *","timezone":"Local",` + job + `}`, `invalid timezone: "Local"`},
		{"EmptyTimezone", "POST", "/crons/g/entries", `{"name":"e","expression":"* * * * *","timezone":"",` + job + `}`, `invalid timezone: ""`},
		{"BadGroupTimezone", "PUT", "/crons/g", `{"timezone":"Nowhere","entries":[]}`, `invalid timezone: "Nowhere"`},
		{"DuplicateNames", "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"* * * * *",` + job + `},{"name":"e","expression":"bad",` + job + `}]}`, `duplicate cron entry name: "e"`},
		{"ReadyAt", "POST", "/crons/g/entries", `{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"q","payload":{},"ready_at":1}}`, "ready_at is not supported for cron entries"},
		{"UniqueWithBatch", "POST", "/crons/g/entries", `{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"q","payload":{},"unique_key":"k","batch":{"key":"b","when":"true","fold":"$new"}}}`, "unique_key and batch cannot be combined"},
		{"GroupName", "PUT", "/crons/a,b", `{"entries":[]}`, "cron group name must not contain ','"},
		{"GroupNameReserved", "POST", "/crons/a*/entries", `{"name":"e","expression":"* * * * *",` + job + `}`, "cron group name must not contain '*' (reserved)"},
		{"EntryName", "PUT", "/crons/g", `{"entries":[{"name":"","expression":"* * * * *",` + job + `}]}`, `entries[0]: cron entry name must not be empty`},
		{"URLEntryName", "PUT", "/crons/g/entries/x%5B", `{"name":"e","expression":"* * * * *",` + job + `}`, "cron entry name must not contain '[' (reserved)"},
		{"QueueName", "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"","payload":{}}}]}`, `entries[0] "e": queue must not be empty`},
		{"MissingEntries", "PUT", "/crons/g", `{"paused":true}`, "invalid JSON: missing field `entries`"},
		{"MissingName", "POST", "/crons/g/entries", `{"expression":"* * * * *",` + job + `}`, "invalid JSON: missing field `name`"},
		{"MissingExpression", "POST", "/crons/g/entries", `{"name":"e",` + job + `}`, "invalid JSON: missing field `expression`"},
		{"MissingJob", "PUT", "/crons/g/entries/e", `{"name":"e","expression":"* * * * *"}`, "invalid JSON: missing field `job`"},
		{"MissingPayload", "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"q"}}]}`, `entries[0] "e": invalid JSON: missing field ` + "`payload`"},
		{"SecondEntryNamed", "PUT", "/crons/g", `{"entries":[{"name":"a","expression":"* * * * *",` + job + `},{"name":"nightly",` + job + `}]}`, `entries[1] "nightly": invalid JSON: missing field ` + "`expression`"},
		{"UnnamedEntry", "PUT", "/crons/g", `{"entries":[{"expression":"* * * * *",` + job + `}]}`, "entries[0]: invalid JSON: missing field `name`"},
		{"MissingPaused", "PATCH", "/crons/g", `{}`, "invalid JSON: missing field `paused`"},
		{"PausedNotBool", "PATCH", "/crons/g/entries/e", `{"paused":"yes"}`, ""},
		{"BadBinding", "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"q","payload":{},"budgets":[{"key":"b","cost":0}]}}]}`, `entries[0] "e": cost must be at least 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.req(t, tc.method, tc.path, tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
			if tc.msg == "" {
				require.Contains(t, r.errorText(t), "invalid JSON: ")
			} else {
				require.Equal(t, tc.msg, r.errorText(t))
			}
		})
	}
	// Nothing was created by any of them.
	var list api.CronList
	c.call(t, "GET", "/crons", "", http.StatusOK, &list)
	require.Empty(t, list.Crons)
}

// TestCron_Unprocessable: a template that every fire would refuse (a
// budget that does not exist and that it would not create), and an
// interval the library would not run as written, are refused at put,
// naming the entry of a group and the budget, and nothing is created.
func TestCron_Unprocessable(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	c.budPut(t, "real", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	entry := func(name, expr, budgets string) string {
		return `{"name":"` + name + `","expression":"` + expr + `","job":{"type":"t","queue":"q","payload":{}` + budgets + `}}`
	}
	ok := entry("ok", "* * * * *", `,"budgets":[{"key":"real"}]`)
	for _, tc := range []struct {
		name, method, path, body, msg string
	}{
		{"MissingBudget", "PUT", "/crons/g", `{"entries":[` + ok + `,` + entry("nightly", "0 3 * * *", `,"budgets":[{"key":"real"},{"key":"nitely"}]`) + `]}`,
			`entries[1] "nightly": budget 'nitely' does not exist (create it first, or give the binding create_with)`},
		{"MissingBudgetEntry", "PUT", "/crons/g/entries/e", entry("e", "* * * * *", `,"budgets":[{"key":"nitely"}]`),
			`budget 'nitely' does not exist (create it first, or give the binding create_with)`},
		{"EveryZero", "PUT", "/crons/g", `{"entries":[` + entry("fast", "@every 0s", "") + `]}`,
			`entries[0] "fast": invalid cron expression "@every 0s": the interval must be at least 1s`},
		{"EveryNegative", "POST", "/crons/g/entries", entry("fast", "@every -1s", ""),
			`invalid cron expression "@every -1s": the interval must be at least 1s`},
		{"EveryBelowASecond", "PUT", "/crons/g/entries/fast", entry("fast", "@every 999ms", ""),
			`invalid cron expression "@every 999ms": the interval must be at least 1s`},
		{"EveryFraction", "PUT", "/crons/g", `{"entries":[` + ok + `,` + entry("odd", "@every 1500ms", "") + `]}`,
			`entries[1] "odd": invalid cron expression "@every 1500ms": the interval must be a whole number of seconds`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.fails(t, tc.method, tc.path, tc.body, http.StatusUnprocessableEntity, tc.msg)
		})
	}
	var list api.CronList
	c.call(t, "GET", "/crons", "", http.StatusOK, &list)
	require.Empty(t, list.Crons, "nothing was created")

	// create_with makes the binding good; so does a budget that exists;
	// one second is the shortest interval.
	var g api.CronGroup
	c.call(t, "PUT", "/crons/g", `{"entries":[`+ok+`,`+entry("made", "@every 1s",
		`,"budgets":[{"key":"new","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"}}}]`)+`]}`, http.StatusOK, &g)
	require.Len(t, g.Entries, 2)
}

func TestCron_Fires(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f api.Format) {
		c := setupCron(t, f)
		c.call(t, "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"* * * * *","timezone":"UTC",
			"job":{"type":"tick","queue":"cron","payload":{"big":18446744073709551615},"priority":3,"retry_limit":1,
			"budgets":[{"key":"b","cost":2,"create_with":{"allocation":4,"strategy":{"type":"while_in_flight"}}}]}}]}`, http.StatusOK, nil)
		first := ms(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC))
		require.Equal(t, first, c.entry(t, "g", "e").NextEnqueueAt)
		require.Empty(t, c.jobs(t, "cron"), "nothing fires early")

		e := c.fireAt(t, "g", "e", first)
		require.Equal(t, first, e.LastEnqueueAt)
		require.Equal(t, first+60_000, e.NextEnqueueAt)
		jobs := c.jobs(t, "cron")
		require.Len(t, jobs, 1)
		j := jobs[0]
		require.Equal(t, "tick", j.Type)
		require.Equal(t, uint16(3), j.Priority)
		require.Equal(t, `{"big":18446744073709551615}`, string(j.Payload))
		require.Equal(t, uint32(1), *j.RetryLimit)
		require.Equal(t, first, j.ReadyAt)
		require.Equal(t, "ready", j.Status)
		require.Equal(t, []api.Binding{{Key: "b", Cost: 2}}, j.Budgets)
		var bud api.Budget
		c.call(t, "GET", "/budgets/b", "", http.StatusOK, &bud)
		require.Equal(t, int64(4), bud.Allocation, "create_with made the budget with the fire")

		// The job is dispatched like any other.
		ts := c.take(t, "queue=cron")
		require.Equal(t, j.ID, ts.next(t, 5*time.Second).ID)

		c.fireAt(t, "g", "e", first+60_000)
		require.Len(t, c.jobs(t, "cron"), 2)
	})
}

func TestCron_SixFields(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	var e api.CronEntry
	c.call(t, "POST", "/crons/g/entries", fmt.Sprintf(cronEntryBody, "e", "*/20 * * * * *"), http.StatusCreated, &e)
	at := ms(cronStart.Add(10 * time.Second))
	require.Equal(t, at, e.NextEnqueueAt, "6 fields: seconds first (12:00:40)")
	e = c.fireAt(t, "g", "e", at)
	require.Equal(t, at+20_000, e.NextEnqueueAt)
	c.call(t, "POST", "/crons/g/entries", fmt.Sprintf(cronEntryBody, "d", "@hourly"), http.StatusCreated, &e)
	require.Equal(t, ms(time.Date(2026, 3, 1, 13, 0, 0, 0, time.Local)), e.NextEnqueueAt, "descriptors")
}

func TestCron_NoFutureOccurrence(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	r := c.call(t, "POST", "/crons/g/entries", fmt.Sprintf(cronEntryBody, "e", "0 0 30 2 *"), http.StatusCreated, nil)
	require.NotContains(t, string(r.body), "next_enqueue_at", "February 30th never comes")
}

func TestCron_Timezones(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	// zizq-node folds the group's default into each entry; zizq-ruby sends
	// it as the group's own. Both mean the same schedule.
	var g api.CronGroup
	c.call(t, "PUT", "/crons/node", `{"entries":[
		{"name":"mel","expression":"0 9 * * *","timezone":"Australia/Melbourne","job":{"type":"t","queue":"q","payload":{}}},
		{"name":"ny","expression":"0 9 * * *","timezone":"America/New_York","job":{"type":"t","queue":"q","payload":{}}}]}`, http.StatusOK, &g)
	mel := ms(time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)) // 9:00 AEDT (UTC+11), 2 March
	ny := ms(time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC))  // 9:00 EST (UTC-5), 1 March
	require.Equal(t, []uint64{mel, ny}, []uint64{g.Entries[0].NextEnqueueAt, g.Entries[1].NextEnqueueAt})

	c.call(t, "PUT", "/crons/ruby", `{"timezone":"Australia/Melbourne","entries":[
		{"name":"mel","expression":"0 9 * * *","job":{"type":"t","queue":"q","payload":{}}},
		{"name":"ny","expression":"0 9 * * *","timezone":"America/New_York","job":{"type":"t","queue":"q","payload":{}}}]}`, http.StatusOK, &g)
	require.Equal(t, "Australia/Melbourne", g.Timezone, "the group's timezone is echoed")
	require.Empty(t, g.Entries[0].Timezone, "an entry echoes its own timezone only")
	require.Equal(t, []uint64{mel, ny}, []uint64{g.Entries[0].NextEnqueueAt, g.Entries[1].NextEnqueueAt})
	// An entry added later takes the group's timezone too.
	var e api.CronEntry
	c.call(t, "PUT", "/crons/ruby/entries/late", `{"name":"late","expression":"0 9 * * *","job":{"type":"t","queue":"q","payload":{}}}`, http.StatusOK, &e)
	require.Equal(t, mel, e.NextEnqueueAt)

	// Changing the timezone an entry is evaluated in is a new schedule.
	c.call(t, "PUT", "/crons/ruby", `{"timezone":"America/New_York","entries":[
		{"name":"mel","expression":"0 9 * * *","job":{"type":"t","queue":"q","payload":{}}}]}`, http.StatusOK, &g)
	require.Equal(t, ny, g.Entries[0].NextEnqueueAt)
	// A PUT without one clears it: the server's local zone.
	c.call(t, "PUT", "/crons/ruby", `{"entries":[{"name":"mel","expression":"0 9 * * *","job":{"type":"t","queue":"q","payload":{}}}]}`, http.StatusOK, &g)
	require.Empty(t, g.Timezone)
	local := time.Date(2026, 3, 1, 9, 0, 0, 0, time.Local)
	if !local.After(cronStart) {
		local = local.AddDate(0, 0, 1)
	}
	require.Equal(t, ms(local), g.Entries[0].NextEnqueueAt)

	// An entry fires at its occurrence in its zone.
	e = c.fireAt(t, "node", "ny", ny)
	require.Equal(t, ny, e.LastEnqueueAt)
	require.Equal(t, ny+24*3600_000, e.NextEnqueueAt)
}

// TestCron_DaylightSaving pins what the parser (robfig/cron/v3) does at
// the transitions: an occurrence in the hour that does not exist is
// skipped that day; one in the hour that happens twice fires twice.
func TestCron_DaylightSaving(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	c := setupCron(t, api.JSON)
	c.clk.AdvanceTo(time.Date(2026, 3, 7, 12, 0, 0, 0, ny))
	var e api.CronEntry
	c.call(t, "POST", "/crons/dst/entries", `{"name":"gap","expression":"30 2 * * *","timezone":"America/New_York","job":{"type":"t","queue":"q","payload":{}}}`, http.StatusCreated, &e)
	// 8 March 2026: 2:00 EST becomes 3:00 EDT, so 2:30 does not exist.
	require.Equal(t, ms(time.Date(2026, 3, 9, 2, 30, 0, 0, ny)), e.NextEnqueueAt)

	c.clk.AdvanceTo(time.Date(2026, 10, 31, 12, 0, 0, 0, ny))
	c.call(t, "POST", "/crons/dst/entries", `{"name":"twice","expression":"30 1 * * *","timezone":"America/New_York","job":{"type":"t","queue":"fold","payload":{}}}`, http.StatusCreated, &e)
	// 1 November 2026: 2:00 EDT becomes 1:00 EST, so 1:30 comes twice.
	firstAt := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC) // 1:30 EDT
	require.Equal(t, ms(firstAt), e.NextEnqueueAt)
	e = c.fireAt(t, "dst", "twice", ms(firstAt))
	require.Equal(t, ms(firstAt.Add(time.Hour)), e.NextEnqueueAt, "1:30 EST, an hour later")
	e = c.fireAt(t, "dst", "twice", ms(firstAt.Add(time.Hour)))
	require.Equal(t, ms(time.Date(2026, 11, 2, 1, 30, 0, 0, ny)), e.NextEnqueueAt)
	require.Len(t, c.jobs(t, "fold"), 2)
}

func TestCron_Pause(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	c.call(t, "PUT", "/crons/g", `{"entries":[`+fmt.Sprintf(cronEntryBody, "a", "* * * * *")+`,`+fmt.Sprintf(cronEntryBody, "b", "* * * * *")+`]}`, http.StatusOK, nil)
	first := ms(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC))

	// A paused entry's schedule moves on; nothing is enqueued.
	c.call(t, "PATCH", "/crons/g/entries/a", `{"paused":true}`, http.StatusOK, nil)
	e := c.fireAt(t, "g", "a", first)
	require.Equal(t, first+60_000, e.NextEnqueueAt)
	require.Zero(t, e.LastEnqueueAt)
	c.fireAt(t, "g", "b", first) // b fired at the same instant
	require.Len(t, c.jobs(t, "q"), 1)

	// A paused group: neither enqueues, both move on.
	c.call(t, "PATCH", "/crons/g/entries/a", `{"paused":false}`, http.StatusOK, nil)
	c.call(t, "PATCH", "/crons/g", `{"paused":true}`, http.StatusOK, nil)
	c.fireAt(t, "g", "a", first+60_000)
	e = c.fireAt(t, "g", "b", first+60_000)
	require.Equal(t, first+120_000, e.NextEnqueueAt)
	require.Equal(t, first, e.LastEnqueueAt)
	require.Len(t, c.jobs(t, "q"), 1)

	// Resumed: the next occurrence fires, not the ones missed while paused.
	c.clk.Advance(5 * time.Second)
	c.call(t, "PATCH", "/crons/g", `{"paused":false}`, http.StatusOK, nil)
	require.Len(t, c.jobs(t, "q"), 1)
	c.fireAt(t, "g", "a", first+120_000)
	c.fireAt(t, "g", "b", first+120_000)
	require.Len(t, c.jobs(t, "q"), 3)
}

// TestCron_CatchUp: occurrences missed while the server was down collapse
// into one run at start; the next is the first after that.
func TestCron_CatchUp(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	c.call(t, "PUT", "/crons/g", `{"entries":[`+fmt.Sprintf(cronEntryBody, "e", "* * * * *")+`]}`, http.StatusOK, nil)
	c.stop()
	c.clk.Advance(10*time.Minute + 10*time.Second) // ten occurrences pass
	c.restart(t)
	now := ms(c.clk.Now())
	var e api.CronEntry
	require.Eventually(t, func() bool {
		e = c.entry(t, "g", "e")
		return e.LastEnqueueAt != 0
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, now, e.LastEnqueueAt, "one catch-up run, at start")
	require.Equal(t, ms(c.clk.Now().Truncate(time.Minute).Add(time.Minute)), e.NextEnqueueAt)
	require.Len(t, c.jobs(t, "q"), 1)
	// And it survives another restart without firing again.
	c.restart(t)
	require.Equal(t, e, c.entry(t, "g", "e"))
	require.Len(t, c.jobs(t, "q"), 1)
}

func TestCron_RefusedFireIsSkipped(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	// The template binds a budget that is gone (no create_with): a put
	// refuses that, and a delete of a bound budget too, so the store is
	// made to lose it, as one written before those checks may have.
	c.budPut(t, "gone", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	c.call(t, "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"q","payload":{},"budgets":[{"key":"gone"}]}}]}`, http.StatusOK, nil)
	require.NoError(t, c.srv.Core().Store().Append(store.DeleteBudget("gone")).Wait(context.Background()))
	c.restart(t)
	first := ms(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC))
	e := c.fireAt(t, "g", "e", first)
	require.Equal(t, first+60_000, e.NextEnqueueAt, "the schedule moves on")
	require.Zero(t, e.LastEnqueueAt, "nothing was enqueued")
	require.Empty(t, c.jobs(t, "q"))
	// Once the budget exists the next occurrence fires.
	c.budPut(t, "gone", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`)
	e = c.fireAt(t, "g", "e", first+60_000)
	require.Equal(t, first+60_000, e.LastEnqueueAt)
	require.Len(t, c.jobs(t, "q"), 1)
}

// TestCron_BudgetReferenced: a budget bound by a cron template only is
// referenced (docs/API.md §Deleting a budget).
func TestCron_BudgetReferenced(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	c.call(t, "PUT", "/budgets/b", `{"allocation":1,"strategy":{"type":"while_in_flight"}}`, http.StatusOK, nil)
	c.call(t, "PUT", "/crons/g", `{"entries":[{"name":"e","expression":"0 0 1 1 *","job":{"type":"t","queue":"q","payload":{},"budgets":[{"key":"b"}]}}]}`, http.StatusOK, nil)
	c.fails(t, "DELETE", "/budgets/b", "", http.StatusConflict,
		"budget 'b' is referenced by cron entry 'e' of group 'g'. Delete the entry or unbind the budget before deleting it.")
	c.fails(t, "DELETE", "/budgets/other", "", http.StatusNotFound, "budget 'other' not found")
	c.call(t, "DELETE", "/crons/g/entries/e", "", http.StatusNoContent, nil)
	c.call(t, "DELETE", "/budgets/b", "", http.StatusNoContent, nil)
}

func TestCron_ResetDeletesGroups(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	c.call(t, "PUT", "/crons/g", `{"entries":[`+fmt.Sprintf(cronEntryBody, "e", "* * * * *")+`]}`, http.StatusOK, nil)
	c.call(t, "POST", "/reset", "", http.StatusNoContent, nil)
	var list api.CronList
	c.call(t, "GET", "/crons", "", http.StatusOK, &list)
	require.Empty(t, list.Crons)
	// Its alarm went with it: the minute passes and nothing fires.
	c.clk.Advance(2 * time.Minute)
	c.enqueue(t, `{"type":"t","queue":"q","payload":1}`)
	require.Len(t, c.jobs(t, "q"), 1)
	c.restart(t)
	c.call(t, "GET", "/crons", "", http.StatusOK, &list)
	require.Empty(t, list.Crons, "reset is durable")
}

func TestCron_Stats(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	c.call(t, "PUT", "/crons/g", `{"entries":[`+fmt.Sprintf(cronEntryBody, "hourly", "0 * * * *")+`,`+fmt.Sprintf(cronEntryBody, "minutely", "* * * * *")+`]}`, http.StatusOK, nil)
	c.call(t, "PUT", "/crons/idle", `{"paused":true,"entries":[`+fmt.Sprintf(cronEntryBody, "x", "* * * * *")+`]}`, http.StatusOK, nil)
	c.call(t, "PATCH", "/crons/g/entries/minutely", `{"paused":true}`, http.StatusOK, nil)
	var st api.Stats
	c.call(t, "GET", "/stats", "", http.StatusOK, &st)
	require.Equal(t, []api.CronStats{
		{Name: "g", Entries: 2, PausedEntries: 1, NextEnqueueAt: ms(time.Date(2026, 3, 1, 13, 0, 0, 0, time.Local)), NextEntry: "hourly"},
		{Name: "idle", Paused: true, Entries: 1},
	}, st.Crons)
}

func cronNames(g api.CronGroup) []string {
	var out []string
	for _, e := range g.Entries {
		out = append(out, e.Name)
	}
	return out
}

// TestCron_NodeClientShapes sends what zizq-node's cron helpers send
// (src/cron.ts: the group's timezone folded into each entry, undefined
// fields stripped) and reads what they read.
func TestCron_NodeClientShapes(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON)
	// client.cron("default").register({timezone: "UTC", entries: [...]})
	var g api.CronGroup
	c.call(t, "PUT", "/crons/default", `{"entries":[
		{"name":"sync","expression":"0 9 * * *","timezone":"UTC","job":{"type":"sync_analytics","queue":"default","payload":{"incremental":true}}},
		{"name":"cleanup","expression":"0 0 * * *","timezone":"UTC","job":{"type":"cleanup","queue":"ops","payload":{},"priority":5,"retry_limit":3,
		 "backoff":{"exponent":2,"base_ms":1000,"jitter_ms":500},"retention":{"completed_ms":0,"dead_ms":86400000}}}]}`, http.StatusOK, &g)
	require.Equal(t, "default", g.Name)
	require.Equal(t, []string{"cleanup", "sync"}, cronNames(g))
	// cron.entry("sync").pause() / .resume() / .get()
	var e api.CronEntry
	c.call(t, "PATCH", "/crons/default/entries/sync", `{"paused":true}`, http.StatusOK, &e)
	require.True(t, e.Paused)
	c.call(t, "PATCH", "/crons/default/entries/sync", `{"paused":false}`, http.StatusOK, &e)
	require.False(t, e.Paused)
	// cron.entry("sync").register({...}): PUT with the name in the body too.
	c.call(t, "PUT", "/crons/default/entries/sync", `{"name":"sync","expression":"0 10 * * *","timezone":"UTC","job":{"type":"sync_analytics","queue":"default","payload":{"incremental":false}}}`, http.StatusOK, &e)
	require.Equal(t, ms(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)), e.NextEnqueueAt)
	// cron.pause() / .resume(): PATCH the group, the whole group back.
	c.call(t, "PATCH", "/crons/default", `{"paused":true}`, http.StatusOK, &g)
	require.True(t, g.Paused)
	require.Len(t, g.Entries, 2)
	c.call(t, "DELETE", "/crons/default/entries/sync", "", http.StatusNoContent, nil)
	c.call(t, "DELETE", "/crons/default", "", http.StatusNoContent, nil)
	c.fails(t, "GET", "/crons/default", "", http.StatusNotFound, "cron group 'default' not found")
}

// TestCron_RubyClientShapes sends what zizq-ruby's Crontab sends
// (define_crontab with a schedule timezone; entries by define_entry; the
// client's msgpack format), and checks its read-then-redefine: the group
// read back, sent again as it came, changes nothing.
func TestCron_RubyClientShapes(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f api.Format) {
		c := setupCron(t, f)
		var g api.CronGroup
		c.call(t, "PUT", "/crons/reports", `{"timezone":"Europe/London","entries":[
			{"name":"weekly","expression":"0 2 * * MON","job":{"type":"WeeklyReportJob","queue":"reports","payload":{"args":[1,"x"]},"priority":100,
			 "budgets":[{"key":"reporting","cost":2,"create_with":{"allocation":4,"strategy":{"type":"while_in_flight"}}}]}},
			{"name":"hourly","expression":"0 * * * *","timezone":"UTC","paused":true,"job":{"type":"Tick","queue":"default","payload":null}}]}`, http.StatusOK, &g)
		require.Equal(t, "Europe/London", g.Timezone)
		before := g

		// Read, then redefine with what was read (Crontab#redefine after
		// materialize): every field the template carries goes back.
		redefined := api.CronGroupRequest{Timezone: &g.Timezone, Entries: []api.CronEntryRequest{}}
		for _, e := range g.Entries {
			redefined.Entries = append(redefined.Entries, api.CronEntryRequest{
				Name: api.Ptr(e.Name), Expression: api.Ptr(e.Expression), Timezone: nonEmpty(e.Timezone), Paused: api.Ptr(e.Paused), Job: &e.Job,
			})
		}
		body, err := api.Marshal(api.JSON, redefined)
		require.NoError(t, err)
		c.clk.Advance(time.Minute)
		c.call(t, "PUT", "/crons/reports", string(body), http.StatusOK, &g)
		require.Equal(t, before, g, "a read-then-redefine changes nothing, budgets and create_with included")

		// add_cron_group_entry (201, 409), replace_cron_group_entry,
		// update_cron_group_entry, update_cron_group, delete_all_crons.
		var e api.CronEntry
		c.call(t, "POST", "/crons/reports/entries", `{"name":"daily","expression":"0 6 * * *","job":{"type":"Daily","queue":"reports","payload":{}}}`, http.StatusCreated, &e)
		require.Equal(t, ms(time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)), e.NextEnqueueAt, "London is on GMT in March")
		c.fails(t, "POST", "/crons/reports/entries", `{"name":"daily","expression":"0 6 * * *","job":{"type":"Daily","queue":"reports","payload":{}}}`, http.StatusConflict,
			"cron entry 'daily' already exists in group 'reports'")
		c.call(t, "PUT", "/crons/reports/entries/daily", `{"name":"daily","expression":"30 6 * * *","timezone":"Asia/Tokyo","job":{"type":"Daily","queue":"reports","payload":{}}}`, http.StatusOK, &e)
		require.Equal(t, "Asia/Tokyo", e.Timezone)
		c.call(t, "PATCH", "/crons/reports/entries/daily", `{"paused":true}`, http.StatusOK, &e)
		require.True(t, e.Paused)
		c.call(t, "PATCH", "/crons/reports", `{"paused":true}`, http.StatusOK, &g)
		require.True(t, g.Paused)
		require.Equal(t, "Europe/London", g.Timezone)
		var del api.Deleted
		c.call(t, "DELETE", "/crons", "", http.StatusOK, &del)
		require.Equal(t, int64(1), del.Deleted)
	})
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// TestCron_StorageFailureRetries: a fire whose commit fails (a full disk)
// leaves the entry as it was and no job; once the disk takes writes again
// it fires, once.
func TestCron_StorageFailureRetries(t *testing.T) {
	t.Parallel()
	c := setupCron(t, api.JSON, servertest.SQLite) // a simulated full disk
	c.call(t, "PUT", "/crons/g", `{"entries":[`+fmt.Sprintf(cronEntryBody, "e", "* * * * *")+`]}`, http.StatusOK, nil)
	first := ms(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC))
	servertest.SQLiteDB(t, c.srv).SimulateFault(sqlite.FaultDiskFull)
	c.clk.AdvanceTo(time.UnixMilli(int64(first)))
	// The fire failed: it tries again a second later, on the one timer.
	require.Eventually(t, func() bool {
		at, ok := c.clk.NextAt()
		return ok && at.UnixMilli() == int64(first)+1000
	}, 10*time.Second, 5*time.Millisecond, "a retry a second later")
	e := c.entry(t, "g", "e")
	require.Equal(t, first, e.NextEnqueueAt, "the entry is as it was")
	require.Zero(t, e.LastEnqueueAt)
	require.Empty(t, c.jobs(t, "q"))

	servertest.SQLiteDB(t, c.srv).SimulateFault(sqlite.NoFault)
	e = c.fireAt(t, "g", "e", first+1000)
	require.Equal(t, first+1000, e.LastEnqueueAt)
	require.Equal(t, first+60_000, e.NextEnqueueAt)
	require.Len(t, c.jobs(t, "q"), 1)
	c.restart(t)
	require.Equal(t, e, c.entry(t, "g", "e"))
	require.Len(t, c.jobs(t, "q"), 1)
}

// TestCron_UniqueFires: a template's unique key applies to every fire; a
// fire that ends as a duplicate still moves its entry's schedule on (the
// schedule commits with the enqueue, whatever its outcome).
func TestCron_UniqueFires(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f api.Format) {
		c := setupCron(t, f)
		body := `{"entries":[{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"q","payload":{},"unique_key":"nightly","unique_while":"queued"}}]}`
		var g api.CronGroup
		c.call(t, "PUT", "/crons/g", body, http.StatusOK, &g)
		require.Equal(t, "nightly", *g.Entries[0].Job.UniqueKey)
		require.Equal(t, api.UniqueWhileQueued, *g.Entries[0].Job.UniqueWhile)

		first := ms(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC))
		c.fireAt(t, "g", "e", first)
		e := c.fireAt(t, "g", "e", first+60_000)
		require.Equal(t, first+60_000, e.LastEnqueueAt, "the duplicate fire moved the schedule")
		require.Equal(t, first+120_000, e.NextEnqueueAt)
		jobs := c.jobs(t, "q")
		require.Len(t, jobs, 1, "the second fire was a duplicate")
		require.Equal(t, "nightly", jobs[0].UniqueKey)
	})
}

// TestCron_BatchedFires: a template keeps its batch, echoed as sent; a
// fire that folds into the pending job of its batch still moves its
// entry's schedule on, durably (the schedule commits with the fold).
func TestCron_BatchedFires(t *testing.T) {
	t.Parallel()
	eachFormat(t, func(t *testing.T, f api.Format) {
		c := setupCron(t, f)
		batch := `{"key":"ticks","when":"true","fold":"$existing | .n += $new.n"}`
		body := `{"entries":[{"name":"e","expression":"* * * * *","job":{"type":"t","queue":"q","payload":{"n":1},"batch":` + batch + `}}]}`
		var g api.CronGroup
		c.call(t, "PUT", "/crons/g", body, http.StatusOK, &g)
		want := &api.BatchRequest{Key: api.Ptr("ticks"), When: api.Ptr("true"), Fold: api.Ptr("$existing | .n += $new.n")}
		require.Equal(t, want, g.Entries[0].Job.Batch)

		first := ms(time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC))
		c.fireAt(t, "g", "e", first)
		e := c.fireAt(t, "g", "e", first+60_000)
		require.Equal(t, first+60_000, e.LastEnqueueAt, "the fire that folded moved the schedule")
		require.Equal(t, first+120_000, e.NextEnqueueAt)
		jobs := c.jobs(t, "q")
		require.Len(t, jobs, 1, "the second fire folded into the first job")
		require.JSONEq(t, `{"n":2}`, payloadOf(t, c.testBundle, jobs[0].ID))

		// Had the fold not committed the schedule, the restarted server
		// would fire the occurrence again and fold n up to 3.
		c.restart(t)
		require.Equal(t, e, c.entry(t, "g", "e"))
		require.Equal(t, want, c.entry(t, "g", "e").Job.Batch)
		require.JSONEq(t, `{"n":2}`, payloadOf(t, c.testBundle, jobs[0].ID), "the restart fired nothing again")
	})
}
