package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var streamFormats = []struct {
	name string
	f    StreamFormat
}{{"NDJSON", NDJSON}, {"MsgPackStream", MsgPackStream}, {"SSE", SSE}}

// stream writes a take stream as the server does: a heartbeat, then each
// job's frame followed by a heartbeat.
func stream(t testing.TB, f StreamFormat, jobs ...Job) []byte {
	t.Helper()
	b := Heartbeat(f)
	for _, j := range jobs {
		var err error
		b, err = AppendStreamFrame(b, f, j)
		require.NoError(t, err)
		b = append(b, Heartbeat(f)...)
	}
	return b
}

func TestFrameReader_Next(t *testing.T) {
	t.Parallel()
	jobs := []Job{
		{ID: id1, Type: "t", Queue: "q", Status: StatusInFlight, Payload: Payload(`{"a":[1,"x\ny"]}`), DequeuedAt: 7},
		{ID: id2, Type: "u", Queue: "r:s/t", Status: StatusInFlight, Payload: Payload(`null`)},
	}
	for _, tt := range streamFormats {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fr := NewFrameReader(bytes.NewReader(stream(t, tt.f, jobs...)), tt.f)
			for _, j := range jobs {
				hb, err := fr.Next()
				require.NoError(t, err)
				require.Empty(t, hb, "a heartbeat")
				msg, err := fr.Next()
				require.NoError(t, err)
				want, err := Marshal(tt.f.Message(), j)
				require.NoError(t, err)
				require.Equal(t, want, msg)
			}
			hb, err := fr.Next()
			require.NoError(t, err)
			require.Empty(t, hb)
			_, err = fr.Next()
			require.Equal(t, io.EOF, err, "a clean end is io.EOF itself")
		})
	}
}

func TestFrameReader_Job(t *testing.T) {
	t.Parallel()
	j := Job{ID: id1, Type: "t", Queue: "q", Status: StatusInFlight, Payload: Payload(`{"big":18446744073709551615}`), Attempts: 2}
	for _, tt := range streamFormats {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fr := NewFrameReader(bytes.NewReader(stream(t, tt.f, j, j)), tt.f)
			for range 2 {
				got, err := fr.Job()
				require.NoError(t, err, "heartbeats are skipped")
				require.Equal(t, j, got)
			}
			_, err := fr.Job()
			require.Equal(t, io.EOF, err)
		})
	}
}

func TestFrameReader_LargeFrame(t *testing.T) {
	t.Parallel()
	j := Job{ID: id1, Status: StatusInFlight, Payload: Payload(`"` + strings.Repeat("x", 3*smallFrame) + `"`)}
	for _, tt := range streamFormats {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := NewFrameReader(bytes.NewReader(stream(t, tt.f, j)), tt.f).Job()
			require.NoError(t, err)
			require.Equal(t, j, got)
		})
	}
}

func TestFrameReader_CutMidFrame(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    StreamFormat
		data string
	}{
		{"NDJSONLine", NDJSON, `{"id":"x"`},
		{"NDJSONAfterFrame", NDJSON, "{}\n{"},
		{"MsgPackLength", MsgPackStream, "\x00\x00"},
		{"MsgPackNoBody", MsgPackStream, "\x00\x00\x00\x05"},
		{"MsgPackBody", MsgPackStream, "\x00\x00\x00\x05\x81\xa1"},
		{"MsgPackLargeBody", MsgPackStream, "\x00\x10\x00\x00\x81\xa1"},
		{"SSEData", SSE, "data: {}\n"},
		{"SSEComment", SSE, ": heartbeat\n"},
		{"SSEPartialLine", SSE, "data: {"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fr := NewFrameReader(strings.NewReader(tt.data), tt.f)
			var err error
			for err == nil {
				_, err = fr.Next()
			}
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.EqualError(t, err, "take stream cut mid-frame: unexpected EOF")
		})
	}
}

func TestFrameReader_SSEEvents(t *testing.T) {
	t.Parallel()
	data := "data: {\"a\":1}\n\n" +
		": a comment\r\n\r\n" +
		"event: job\nid: 7\ndata:[1,\ndata: 2]\n\n" +
		"retry: 10\n\n" +
		"data\n\n"
	fr := NewFrameReader(strings.NewReader(data), SSE)
	var got []string
	for {
		msg, err := fr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		got = append(got, string(msg))
	}
	require.Equal(t, []string{`{"a":1}`, "", "[1,\n2]", "", ""}, got)
}

func TestFrameReader_Errors(t *testing.T) {
	t.Parallel()
	_, err := NewFrameReader(strings.NewReader("\x7f\xff\xff\xff"), MsgPackStream).Next()
	require.EqualError(t, err, "take stream frame of 2147483647 bytes is too large")

	_, err = NewFrameReader(strings.NewReader("{oops}\n"), NDJSON).Job()
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	require.True(t, strings.HasPrefix(err.Error(), "decode take frame: invalid JSON: "), err.Error())

	_, err = NewFrameReader(strings.NewReader("\x00\x00\x00\x01\xc1"), MsgPackStream).Job()
	require.ErrorAs(t, err, &de)

	_, err = NewFrameReader(strings.NewReader(""), StreamFormat(9)).Next()
	require.EqualError(t, err, "read take frame: unknown format 9")

	boom := errors.New("boom")
	_, err = NewFrameReader(io.MultiReader(strings.NewReader("{"), errReader{boom}), NDJSON).Next()
	require.Equal(t, boom, err, "the reader's own errors pass unchanged")
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestFormat_Stream(t *testing.T) {
	t.Parallel()
	require.Equal(t, NDJSON, JSON.Stream())
	require.Equal(t, MsgPackStream, MsgPack.Stream())
	require.Equal(t, JSON, NDJSON.Message())
	require.Equal(t, JSON, SSE.Message())
	require.Equal(t, MsgPack, MsgPackStream.Message())
}

// FuzzFrameReader reads arbitrary bytes as each framing: it never panics,
// always ends, and no message is longer than the stream.
func FuzzFrameReader(f *testing.F) {
	for _, s := range []string{"", "\n", "{}\n\n", "\x00\x00\x00\x00", "\x00\x00\x00\x02{}", "data: x\n\n", ": hb\n\ndata:\ndata\n\n", "\xff\xff\xff\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tt := range streamFormats {
			fr := NewFrameReader(bytes.NewReader(data), tt.f)
			ended := false
			for range len(data) + 1 { // every frame takes a byte at least
				msg, err := fr.Next()
				if err != nil {
					ended = true
					break
				}
				require.LessOrEqual(t, len(msg), len(data))
			}
			require.True(t, ended, "%s: the reader must end", tt.name)
		}
	})
}

// FuzzFrameReader_RoundTrip writes jobs as the server does and reads them
// back in every framing.
func FuzzFrameReader_RoundTrip(f *testing.F) {
	f.Add("q", "t", `{"a":1}`, uint16(3))
	f.Add("a\nb", "\r\n\r\n", `"data: x\n\n"`, uint16(0))
	f.Add(": heartbeat", "\x00\x00\x00\x00", `[1,2.5,null]`, uint16(65535))
	f.Add("q", "t", `{"n":10.00,"m":[1e2,-0.0]}`, uint16(7)) // numbers MessagePack respells
	f.Fuzz(func(t *testing.T, queue, typ, payload string, priority uint16) {
		if !utf8.ValidString(queue) || !utf8.ValidString(typ) {
			return // invalid UTF-8 does not survive JSON, by design
		}
		p, err := CanonicalJSON([]byte(payload))
		if err != nil {
			return
		}
		j := Job{ID: id1, Queue: queue, Type: typ, Payload: Payload(p), Priority: priority, Status: StatusInFlight}
		for _, tt := range streamFormats {
			fr := NewFrameReader(bytes.NewReader(stream(t, tt.f, j, j)), tt.f)
			for range 2 {
				got, err := fr.Job()
				require.NoError(t, err, tt.name)
				requireSameJob(t, tt.f, j, got)
			}
			_, err := fr.Job()
			require.Equal(t, io.EOF, err, tt.name)
		}
	})
}

// requireSameJob compares a job read back with the one written. JSON
// framings keep the payload's text; MessagePack carries values, so a number
// may come back spelled differently (10.00 as 10.0) and only its value must
// match.
func requireSameJob(t *testing.T, f StreamFormat, want, got Job) {
	t.Helper()
	if f.Message() != MsgPack {
		require.Equal(t, want, got, StreamContentType(f))
		return
	}
	require.Equal(t, payloadValue(t, want.Payload), payloadValue(t, got.Payload), StreamContentType(f))
	want.Payload, got.Payload = nil, nil
	require.Equal(t, want, got, StreamContentType(f))
}

// payloadValue decodes a payload with numbers as float64, the precision
// MessagePack's floats have.
func payloadValue(t *testing.T, p Payload) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(p, &v))
	return v
}
