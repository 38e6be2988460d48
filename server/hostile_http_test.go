package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/server"
)

// errorLog counts the records logged at error level: a handler panic or a
// 500 is logged there.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelError }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *errorLog) WithGroup(string) slog.Handler      { return l }

func (l *errorLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.msgs...)
}

// hostile is one generated request.
type hostile struct {
	method, path string
	accept, ct   string
	body         []byte
}

func (h hostile) String() string {
	return fmt.Sprintf("%s %s (Accept %q, Content-Type %q) body %q", h.method, h.path, h.accept, h.ct, h.body)
}

// hostileGen makes requests from mutated valid ones, seeded so that a
// failure can be replayed.
type hostileGen struct {
	rng  *rand.Rand
	ids  []string
	keys []string
}

func (g *hostileGen) pick(s []string) string { return s[g.rng.IntN(len(s))] }

var (
	hostileMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW"}
	hostilePaths   = []string{
		"/jobs", "/jobs/bulk", "/jobs/count", "/jobs/success", "/jobs/{id}", "/jobs/{id}/success",
		"/jobs/{id}/failure", "/jobs/{id}/errors", "/jobs/{id}/errors/{n}", "/jobs/{id}/why",
		"/jobs/{id}/budgets", "/jobs/{id}/budgets/{key}", "/jobs/budgets/{key}",
		"/budgets", "/budgets/{key}", "/queues", "/stats", "/health", "/version", "/crons/{key}",
		"/crons", "/crons/{key}/entries", "/crons/{key}/entries/{key}",
		"/{key}", "/jobs/{key}/{key}/{key}/{key}", "//jobs", "/jobs/", "/budgets/{key}/x",
	}
	hostileSegments = []string{
		"", "x", "%00", "%2F", "%2e%2e", "..", "%zz", "a%20b", "ü", "\u202e", strings.Repeat("k", 4096),
		"0000000000000000000000000", "zzzzzzzzzzzzzzzzzzzzzzzzz", "-1", "4294967296", "1.5",
	}
	hostileQueryKeys = []string{
		"id", "queue", "type", "status", "priority", "ready_at", "attempts", "limit", "order",
		"from", "filter", "state", "budget", "prefetch", "bogus", "", "id[]", "%zz",
	}
	hostileQueryValues = []string{
		"", "1", "0", "-1", "1..", "..5", "5..1", "1..2..3", "x", "18446744073709551616", "ready,,x",
		"in_flight", "asc", "sideways", ".n == 1", ".a ==", "true", "%zz", strings.Repeat("q,", 2000),
	}
	hostileAccepts      = []string{"", "", "application/json", "application/msgpack", "*/*", "text/html", "application/*", "application/json;;;q=x"}
	hostileContentTypes = []string{"", "", "application/json", "application/msgpack", "text/plain", "application/json; charset=utf-8", "multipart/form-data; boundary=x"}
	hostileJSONSeeds    = []string{
		`{"type":"t","queue":"q","payload":{"n":1,"s":"x"},"priority":5,"retry_limit":3}`,
		`{"type":"t","queue":"q","payload":null,"budgets":[{"key":"b","cost":1}]}`,
		`{"type":"t","queue":"q","payload":1,"backoff":{"exponent":2,"base_ms":10,"jitter_ms":5},"retention":{"completed_ms":1,"dead_ms":2}}`,
		`{"jobs":[{"type":"t","queue":"q","payload":[1,2,3]},{"type":"u","queue":"r","payload":"s"}]}`,
		`{"allocation":3,"strategy":{"type":"time_based","duration_ms":1000,"burst":2}}`,
		`{"allocation":2,"strategy":{"type":"while_in_flight"}}`,
		`{"paused":false,"timezone":"UTC","entries":[{"name":"e","expression":"*/5 * * * * *","timezone":"Europe/Paris","job":{"type":"t","queue":"q","payload":{},"budgets":[{"key":"b","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"}}}]}}]}`,
		`{"name":"e","expression":"@every 1s","paused":true,"job":{"type":"t","queue":"q","payload":null,"priority":1}}`,
		`{"paused":true}`,
		`{"priority":7,"queue":"q2","retry_limit":null}`,
		`{"message":"boom","error_type":"E","backtrace":"b","retry_at":1,"kill":false}`,
		`{"ids":["0000000000000000000000000"]}`,
		`{"cost":2}`,
		`{"budgets":[{"key":"b","cost":1}]}`,
	}
	hostileNumbers = []string{"-1", "1.5", "1e400", "18446744073709551616", "-9223372036854775809", "NaN", "0x10", "\"1\"", "null", "[]", "{}"}
)

func (g *hostileGen) segment() string {
	switch g.rng.IntN(4) {
	case 0:
		return g.pick(g.ids)
	case 1:
		return g.pick(g.keys)
	}
	return g.pick(hostileSegments)
}

func (g *hostileGen) path() string {
	p := g.pick(hostilePaths)
	for _, ph := range []string{"{id}", "{key}", "{n}"} {
		for strings.Contains(p, ph) {
			p = strings.Replace(p, ph, g.segment(), 1)
		}
	}
	if g.rng.IntN(2) == 0 {
		var q []string
		for range 1 + g.rng.IntN(4) {
			q = append(q, url.QueryEscape(g.pick(hostileQueryKeys))+"="+url.QueryEscape(g.pick(hostileQueryValues)))
		}
		if g.rng.IntN(8) == 0 {
			q = append(q, "%zz=1") // badly escaped
		}
		p += "?" + strings.Join(q, "&")
	}
	return p
}

// mutate damages a valid body in one of many ways; the result may still be
// valid, which the test accounts for.
func (g *hostileGen) mutate(b []byte) []byte {
	b = append([]byte(nil), b...)
	switch g.rng.IntN(10) {
	case 0: // truncated
		return b[:g.rng.IntN(len(b))]
	case 1: // a byte changed
		b[g.rng.IntN(len(b))] = byte(g.rng.IntN(256))
	case 2: // random bytes inserted
		i := g.rng.IntN(len(b) + 1)
		junk := make([]byte, 1+g.rng.IntN(8))
		for k := range junk {
			junk[k] = byte(g.rng.IntN(256))
		}
		return append(b[:i], append(junk, b[i:]...)...)
	case 3: // a number replaced by something out of range or of another type
		s := string(b)
		for _, n := range []string{"1", "2", "3", "5", "7", "10", "1000"} {
			if strings.Contains(s, ":"+n) {
				return []byte(strings.Replace(s, ":"+n, ":"+g.pick(hostileNumbers), 1))
			}
		}
	case 4: // a key duplicated with another type
		return bytes.Replace(b, []byte(`{"`), []byte(`{"type":5,"queue":[],"`), 1)
	case 5: // deep nesting
		depth := 10000 + g.rng.IntN(100)
		return []byte(`{"type":"t","queue":"q","payload":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
	case 6: // not an object
		return []byte(g.pick([]string{`[]`, `"s"`, `1`, `null`, `true`, ``, ` `, "\xff\xfe", `{}`, `{"jobs":null}`}))
	case 7: // random bytes
		junk := make([]byte, g.rng.IntN(64))
		for k := range junk {
			junk[k] = byte(g.rng.IntN(256))
		}
		return junk
	case 8: // trailing data
		return append(b, []byte(g.pick([]string{`{}`, `x`, `,`, "\x00"}))...)
	}
	return b
}

func (g *hostileGen) body(format string) []byte {
	seed := []byte(g.pick(hostileJSONSeeds))
	if format == "application/msgpack" {
		var v any
		if err := json.Unmarshal(seed, &v); err == nil {
			if mp, err := api.Marshal(api.MsgPack, v); err == nil {
				seed = mp
			}
		}
	}
	if g.rng.IntN(5) == 0 {
		return seed
	}
	return g.mutate(seed)
}

func (g *hostileGen) next() hostile {
	h := hostile{method: g.pick(hostileMethods), path: g.path(), accept: g.pick(hostileAccepts), ct: g.pick(hostileContentTypes)}
	if h.method != "GET" && h.method != "HEAD" && g.rng.IntN(6) != 0 {
		h.body = g.body(h.ct)
	}
	return h
}

// fingerprint is everything a request could change, as the API shows it.
func fingerprint(t *testing.T, tb *testBundle) string {
	t.Helper()
	jobs := tb.req(t, "GET", "/jobs?limit=2000", nil)
	require.Equal(t, http.StatusOK, jobs.status)
	budgets := tb.req(t, "GET", "/budgets", nil)
	require.Equal(t, http.StatusOK, budgets.status)
	return string(jobs.body) + "\n" + string(budgets.body)
}

// TestHostile_HTTP sends generated hostile requests (mutated bodies in both
// encodings, odd paths, query strings and headers) to a real server. Every
// reply must be a 2xx (a mutation can stay valid) or a 4xx with an error
// body in the negotiated format; a refused request must change nothing;
// an EOF (net/http's answer to a handler panic), a 5xx, or anything logged
// as an error fails.
func TestHostile_HTTP(t *testing.T) {
	t.Parallel()
	log := &errorLog{}
	tb := setup(t, func(o *server.Options) { o.Logger = slog.New(log) })
	r := tb.req(t, "PUT", "/budgets/b", `{"allocation":2,"strategy":{"type":"while_in_flight"}}`)
	require.Equal(t, http.StatusOK, r.status)
	j := tb.enqueue(t, `{"type":"t","queue":"q","payload":null,"budgets":[{"key":"b"}]}`)
	held := inFlightJob(t, tb, `{"type":"t","queue":"held","payload":null}`)

	n := 400
	if testing.Short() {
		n = 150
	}
	// A fixed seed keeps CI repeatable; ZIZQ_HOSTILE_SEED explores others.
	seed := uint64(1)
	if v := os.Getenv("ZIZQ_HOSTILE_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
	}
	g := &hostileGen{rng: rand.New(rand.NewPCG(seed, 7)), ids: []string{j.ID, held.ID}, keys: []string{"b", "nope", "a:b", "x y"}}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	before := fingerprint(t, tb)
	for range n {
		h := g.next()
		req, err := http.NewRequest(h.method, tb.url+h.path, bytes.NewReader(h.body))
		if err != nil {
			continue // not even a request net/http would send
		}
		for k, v := range map[string]string{"Accept": h.accept, "Content-Type": h.ct} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		resp, err := client.Do(req)
		require.NoError(t, err, "%s", h)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err, "%s", h)
		require.Less(t, resp.StatusCode, 500, "%s: %s", h, body)
		if resp.StatusCode < 300 {
			before = fingerprint(t, tb) // a valid request may change things
			continue
		}
		require.GreaterOrEqual(t, resp.StatusCode, 400, "%s", h)
		if h.method != "HEAD" {
			requireErrorBody(t, resp, body, h)
		}
		require.Equal(t, before, fingerprint(t, tb), "a refused request changed something: %s", h)
	}
	require.Empty(t, log.messages(), "errors were logged")
	require.Equal(t, http.StatusOK, tb.req(t, "GET", "/health", nil).status)
}

// requireErrorBody checks an error reply: {"error": "..."} in JSON or
// MessagePack as negotiated, or the bulk ack's {"not_found": [...]}.
func requireErrorBody(t *testing.T, resp *http.Response, body []byte, h hostile) {
	t.Helper()
	f, ok := api.RequestFormat(resp.Header.Get("Content-Type"))
	require.True(t, ok, "%s: content type %q", h, resp.Header.Get("Content-Type"))
	require.Contains(t, []string{api.MediaJSON, api.MediaMsgPack}, resp.Header.Get("Content-Type"), "%s", h)
	var m map[string]any
	require.NoError(t, api.Unmarshal(f, body, &m), "%s: body %q", h, body)
	if resp.StatusCode == http.StatusUnprocessableEntity && m["not_found"] != nil {
		return
	}
	msg, _ := m["error"].(string)
	require.NotEmpty(t, msg, "%s: body %q", h, body)
}

// TestHostile_Protocol sends requests net/http itself refuses, or bodies
// that break off: each gets a 4xx and the server goes on serving. (net/http
// answers an unknown Transfer-Encoding with 501 and an unknown HTTP version
// with 505, before any handler runs; those are left out.)
func TestHostile_Protocol(t *testing.T) {
	t.Parallel()
	log := &errorLog{}
	tb := setup(t, func(o *server.Options) { o.Logger = slog.New(log) })
	for _, c := range []struct{ name, raw string }{
		{"NoMethod", "/jobs HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"Garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"},
		{"HeaderWithoutColon", "GET /health HTTP/1.1\r\nHost: x\r\nnonsense\r\n\r\n"},
		{"BadHeaderName", "GET /health HTTP/1.1\r\nHost: x\r\nBad Name: 1\r\n\r\n"},
		{"NoHost", "GET /health HTTP/1.1\r\n\r\n"},
		{"NegativeLength", "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"},
		{"TwoLengths", "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"},
		{"BadChunk", "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"},
		{"ShortBody", "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"type\":"},
		{"HugeHeader", "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"},
		{"NULInPath", "GET /jobs/\x00 HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := tb.dial(t)
			require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
			go func() {
				_, _ = io.WriteString(conn, c.raw)
				if c.name == "ShortBody" {
					conn.(interface{ CloseWrite() error }).CloseWrite()
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if c.name == "ShortBody" && err != nil {
				return // the client left: nobody to answer
			}
			require.NoError(t, err)
			resp.Body.Close()
			require.GreaterOrEqual(t, resp.StatusCode, 400)
			require.Less(t, resp.StatusCode, 500)
		})
	}
	require.Zero(t, jobCount(t, tb, ""))
	require.Empty(t, log.messages(), "errors were logged")
}
