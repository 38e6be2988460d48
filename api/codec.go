package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"github.com/vmihailenco/msgpack/v5"
)

// Format is the body encoding of a regular request or response.
type Format uint8

// Body encodings.
const (
	JSON Format = iota
	MsgPack
)

// StreamFormat is the framing of the take stream (GET /jobs/take).
type StreamFormat uint8

// Take stream framings (docs/API.md §Stream formats).
const (
	// NDJSON frames are compact JSON followed by "\n".
	NDJSON StreamFormat = iota
	// MsgPackStream frames are a big-endian u32 length and a MessagePack map.
	MsgPackStream
	// SSE frames are "data: " + compact JSON + "\n\n".
	SSE
)

// Media types of the bodies and streams.
const (
	MediaJSON          = "application/json"
	MediaMsgPack       = "application/msgpack"
	MediaNDJSON        = "application/x-ndjson"
	MediaMsgPackStream = "application/vnd.zizq.msgpack-stream"
	MediaSSE           = "text/event-stream"
)

// SupportedFormats lists the body media types, as sent in 406 and 415 error
// bodies of the regular endpoints.
var SupportedFormats = []string{MediaJSON, MediaMsgPack}

// SupportedStreamFormats lists the take stream media types, as sent in the
// 406 error body of GET /jobs/take.
var SupportedStreamFormats = []string{MediaSSE, MediaNDJSON, MediaMsgPackStream}

// ContentType returns the Content-Type of a body in format f.
func ContentType(f Format) string {
	if f == MsgPack {
		return MediaMsgPack
	}
	return MediaJSON
}

// StreamContentType returns the Content-Type of a take stream in format f.
func StreamContentType(f StreamFormat) string {
	switch f {
	case MsgPackStream:
		return MediaMsgPackStream
	case SSE:
		return MediaSSE
	}
	return MediaNDJSON
}

// ResponseFormat picks the response format from an Accept header by substring
// match, as Zizq does (docs/API.md §Content negotiation): MessagePack when it
// mentions application/msgpack, JSON when it is empty or mentions
// application/json or */*. false means 406 Not Acceptable. Matching ignores
// case.
func ResponseFormat(accept string) (Format, bool) {
	if accept == "" {
		return JSON, true
	}
	accept = lowerASCII(accept)
	switch {
	case strings.Contains(accept, MediaMsgPack):
		return MsgPack, true
	case strings.Contains(accept, MediaJSON), strings.Contains(accept, "*/*"):
		return JSON, true
	}
	return JSON, false
}

// RequestFormat picks the request body format from a Content-Type header by
// substring match (docs/API.md §Content negotiation): JSON when it is empty.
// false means 415 Unsupported Media Type. Matching ignores case.
func RequestFormat(contentType string) (Format, bool) {
	if contentType == "" {
		return JSON, true
	}
	contentType = lowerASCII(contentType)
	switch {
	case strings.Contains(contentType, MediaMsgPack):
		return MsgPack, true
	case strings.Contains(contentType, MediaJSON):
		return JSON, true
	}
	return JSON, false
}

// TakeFormat picks the take stream framing from an Accept header by substring
// match, first hit wins (docs/API.md §Stream formats): SSE, then the
// MessagePack stream (for its own type or application/msgpack), then NDJSON
// (for application/x-ndjson, application/json, */* or no header). false means
// 406 Not Acceptable. Matching ignores case.
func TakeFormat(accept string) (StreamFormat, bool) {
	if accept == "" {
		return NDJSON, true
	}
	accept = lowerASCII(accept)
	switch {
	case strings.Contains(accept, MediaSSE):
		return SSE, true
	case strings.Contains(accept, MediaMsgPackStream), strings.Contains(accept, MediaMsgPack):
		return MsgPackStream, true
	case strings.Contains(accept, MediaNDJSON), strings.Contains(accept, MediaJSON), strings.Contains(accept, "*/*"):
		return NDJSON, true
	}
	return NDJSON, false
}

// lowerASCII lower-cases s without allocating when it already is.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// DecodeError is an undecodable request body. Its message is the text of the
// 400 error body: "invalid JSON: <detail>" or "invalid MessagePack: <detail>".
type DecodeError struct {
	Msg string
}

// Error returns the message.
func (e *DecodeError) Error() string { return e.Msg }

// Marshal encodes v in format f. JSON is compact and does not escape HTML
// characters. MessagePack writes structs as maps keyed by their json tag
// names, with the same omissions, and integers in their smallest encoding.
func Marshal(f Format, v any) ([]byte, error) {
	var b []byte
	var err error
	switch f {
	case JSON:
		b, err = marshalJSON(v)
	case MsgPack:
		b, err = appendMsgPack(nil, v)
	default:
		return nil, fmt.Errorf("marshal: unknown format %d", f)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Unmarshal decodes a request or response body in format f into v, which
// must be a pointer. Both formats go through the same JSON decoding, so a
// wrong type, an out-of-range number or a missing value fails alike in both:
// MessagePack is first converted to JSON (map keys must be strings; binary
// data, extension types, NaN and infinities are refused). Unknown fields are
// ignored, a top-level null leaves v as it is, and field names match
// exactly (as in Zizq: "ALLOCATION" is an unknown field). An empty body,
// trailing data and strings that are not UTF-8 are errors. Every decoding
// error is a *DecodeError.
func Unmarshal(f Format, data []byte, v any) error {
	switch f {
	case JSON:
		if len(bytes.TrimSpace(data)) == 0 {
			return &DecodeError{Msg: "invalid JSON: empty body"}
		}
		return decodeJSON("invalid JSON: ", data, v)
	case MsgPack:
		if len(data) == 0 {
			return &DecodeError{Msg: "invalid MessagePack: empty body"}
		}
		scratch := scratchBuffers.Get().(*[]byte)
		js, err := msgpackToJSON((*scratch)[:0], data)
		if err == nil {
			err = decodeJSON("invalid MessagePack: ", js, v)
		} else {
			err = &DecodeError{Msg: "invalid MessagePack: " + err.Error()}
		}
		// json.Unmarshal keeps nothing of js (Unmarshalers must copy what
		// they retain), so the buffer can be reused.
		if js != nil && cap(js) <= maxPooledBuffer {
			*scratch = js[:0]
		}
		scratchBuffers.Put(scratch)
		return err
	}
	return fmt.Errorf("unmarshal: unknown format %d", f)
}

// decodeOptions are encoding/json's rules (jsonv1.DefaultOptionsV1), with
// two differences: field names match exactly, as Zizq's decoder matches
// them ({"ALLOCATION":3} sets nothing), and a string that is not valid
// UTF-8 is an error instead of being mangled into U+FFFD (RFC 8259 §8.1;
// the MessagePack path refuses it too).
var decodeOptions = jsonv2.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsontext.AllowInvalidUTF8(false),
)

func decodeJSON(prefix string, data []byte, v any) error {
	if bulk, ok := v.(*BulkEnqueueRequest); ok && decodeBulkFast(data, bulk) {
		return nil
	}
	err := jsonv2.Unmarshal(data, v, decodeOptions)
	if err == nil {
		return nil
	}
	var invalid *jsonv1.InvalidUnmarshalError
	if errors.As(err, &invalid) {
		return err // a programming error, not a bad body
	}
	return &DecodeError{Msg: prefix + jsonErrorDetail(err)}
}

// jsonErrorDetail rewords JSON errors without Go type names where it can:
// "priority: cannot unmarshal number 70000 into uint16".
func jsonErrorDetail(err error) string {
	var te *jsonv1.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		switch te.Type.Kind() {
		case reflect.Struct, reflect.Map:
			want = "object"
		case reflect.Slice, reflect.Array:
			want = "array"
		}
		if te.Field == "" {
			return fmt.Sprintf("cannot unmarshal %s into %s", te.Value, want)
		}
		return fmt.Sprintf("%s: cannot unmarshal %s into %s", te.Field, te.Value, want)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// Pooled encoders: every take stream frame is encoded here, so neither the
// encoders nor their buffers are allocated per call.

// maxPooledBuffer bounds the buffers kept for reuse, so that one huge body
// does not pin its memory in the pool.
const maxPooledBuffer = 1 << 20

type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonEncoders = sync.Pool{New: func() any {
	e := &jsonEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// marshalJSON is the compact JSON of v: a bulk enqueue's answer by
// appendBulkJobsJSON and its request by appendBulkEnqueueJSON when they
// can, anything else by the general encoder.
func marshalJSON(v any) ([]byte, error) {
	var out []byte
	ok := false
	switch v := v.(type) {
	case BulkJobs:
		out, ok = appendBulkJobsJSON(make([]byte, 0, 128*len(v.Jobs)), &v)
	case *BulkJobs:
		out, ok = appendBulkJobsJSON(make([]byte, 0, 128*len(v.Jobs)), v)
	case BulkEnqueueRequest:
		out, ok = appendBulkEnqueueJSON(make([]byte, 0, 192*len(v.Jobs)), &v)
	case *BulkEnqueueRequest:
		out, ok = appendBulkEnqueueJSON(make([]byte, 0, 192*len(v.Jobs)), v)
	}
	if ok {
		return out, nil
	}
	return appendJSON(nil, v)
}

// appendJSON appends the compact JSON of v to dst, without a newline.
func appendJSON(dst []byte, v any) ([]byte, error) {
	e := jsonEncoders.Get().(*jsonEncoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	if err == nil {
		b := e.buf.Bytes()
		dst = append(dst, b[:len(b)-1]...) // Encode ends with '\n'
	}
	if e.buf.Cap() <= maxPooledBuffer {
		jsonEncoders.Put(e)
	}
	return dst, err
}

type msgpackEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var msgpackEncoders = sync.Pool{New: func() any {
	e := &msgpackEncoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	e.enc.SetCustomStructTag("json")
	e.enc.UseCompactInts(true)
	e.enc.SetSortMapKeys(true)
	return e
}}

// appendMsgPack appends the MessagePack encoding of v to dst.
func appendMsgPack(dst []byte, v any) ([]byte, error) {
	e := msgpackEncoders.Get().(*msgpackEncoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	if err == nil {
		dst = append(dst, e.buf.Bytes()...)
	}
	if e.buf.Cap() <= maxPooledBuffer {
		msgpackEncoders.Put(e)
	}
	return dst, err
}

// scratchBuffers hold the JSON form of MessagePack request bodies.
var scratchBuffers = sync.Pool{New: func() any { return new([]byte) }}

// EncodeMsgpack writes the payload as native MessagePack values: objects as
// maps with sorted keys, integers as integers (int64 when they fit, else
// uint64), other numbers as float64, and strings, booleans, null and arrays
// as themselves. An empty payload is nil.
func (p Payload) EncodeMsgpack(enc *msgpack.Encoder) error {
	if len(p) == 0 {
		return enc.EncodeNil()
	}
	t := getTokenizer()
	defer putTokenizer(t)
	if err := t.tokenize(p); err != nil {
		return fmt.Errorf("encode payload: %w", err)
	}
	if _, err := t.emit(enc, 0); err != nil {
		return fmt.Errorf("encode payload: %w", err)
	}
	return nil
}

// DecodeMsgpack reads one MessagePack value into canonical JSON. A nil value
// is left to the msgpack decoder, which makes the payload empty.
func (p *Payload) DecodeMsgpack(dec *msgpack.Decoder) error {
	raw, err := dec.DecodeRaw()
	if err != nil {
		return err
	}
	js, err := msgpackToJSON(nil, raw)
	if err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	c, err := CanonicalJSON(js)
	if err != nil {
		return fmt.Errorf("decode payload: %w", err)
	}
	*p = c
	return nil
}

// JSON to MessagePack, for payloads.
//
// A MessagePack map or array starts with its length, so the JSON is first
// cut into a flat list of tokens in which every container knows its length
// and where it ends; the second pass writes them out.

// maxDepth bounds the nesting of converted values; encoding/json has the
// same limit, so the converters refuse nothing that JSON would accept.
const maxDepth = 10000

type jsonToken struct {
	kind       byte // '{', '[', '"', '0' (number), 't', 'f', 'n'
	escaped    bool // a string holding escapes or non-UTF-8 bytes
	start, end int  // source bytes of a scalar (strings with their quotes)
	n          int  // members of an object, elements of an array
	next       int  // index of the token after this value and its contents
}

type tokenizer struct {
	src  []byte
	toks []jsonToken
	hdr  [5]byte
}

var tokenizers = sync.Pool{New: func() any { return new(tokenizer) }}

func getTokenizer() *tokenizer { return tokenizers.Get().(*tokenizer) }

func putTokenizer(t *tokenizer) {
	t.src = nil
	if cap(t.toks) <= 1<<16 {
		t.toks = t.toks[:0]
		tokenizers.Put(t)
	}
}

var errPayloadSyntax = errors.New("payload is not valid JSON")

func (t *tokenizer) tokenize(src []byte) error {
	t.src = src
	t.toks = t.toks[:0]
	pos, err := t.value(skipSpace(src, 0), 0)
	if err != nil {
		return err
	}
	if skipSpace(src, pos) != len(src) {
		return errPayloadSyntax
	}
	return nil
}

func skipSpace(b []byte, pos int) int {
	for pos < len(b) && (b[pos] == ' ' || b[pos] == '\n' || b[pos] == '\r' || b[pos] == '\t') {
		pos++
	}
	return pos
}

// value reads the value at pos and returns the position after it.
func (t *tokenizer) value(pos, depth int) (int, error) {
	src := t.src
	if pos >= len(src) {
		return 0, errPayloadSyntax
	}
	switch c := src[pos]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, errors.New("payload nested too deeply")
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i := len(t.toks)
		t.toks = append(t.toks, jsonToken{kind: c})
		n := 0
		pos = skipSpace(src, pos+1)
		if pos < len(src) && src[pos] == closer {
			pos++
		} else {
			for {
				var err error
				if c == '{' {
					if pos >= len(src) || src[pos] != '"' {
						return 0, errPayloadSyntax
					}
					if pos, err = t.value(pos, depth+1); err != nil {
						return 0, err
					}
					pos = skipSpace(src, pos)
					if pos >= len(src) || src[pos] != ':' {
						return 0, errPayloadSyntax
					}
					pos = skipSpace(src, pos+1)
				}
				if pos, err = t.value(pos, depth+1); err != nil {
					return 0, err
				}
				n++
				pos = skipSpace(src, pos)
				if pos >= len(src) {
					return 0, errPayloadSyntax
				}
				if src[pos] == closer {
					pos++
					break
				}
				if src[pos] != ',' {
					return 0, errPayloadSyntax
				}
				pos = skipSpace(src, pos+1)
			}
		}
		t.toks[i].n = n
		t.toks[i].next = len(t.toks)
		return pos, nil
	case c == '"':
		start, backslash, nonASCII := pos, false, false
		for pos++; ; pos++ {
			if pos >= len(src) {
				return 0, errPayloadSyntax
			}
			b := src[pos]
			if b == '"' {
				break
			}
			if b < 0x20 {
				return 0, errPayloadSyntax
			}
			if b == '\\' {
				backslash = true
				pos++
			} else if b >= utf8.RuneSelf {
				nonASCII = true
			}
		}
		// Escapes and invalid UTF-8 (which encoding/json would replace)
		// take the slow path through encoding/json.
		escaped := backslash || nonASCII && !utf8.Valid(src[start+1:pos])
		pos++
		t.toks = append(t.toks, jsonToken{kind: '"', escaped: escaped, start: start, end: pos, next: len(t.toks) + 1})
		return pos, nil
	case c == '-' || ('0' <= c && c <= '9'):
		start := pos
		for pos < len(src) && strings.IndexByte("+-.0123456789eE", src[pos]) >= 0 {
			pos++
		}
		t.toks = append(t.toks, jsonToken{kind: '0', start: start, end: pos, next: len(t.toks) + 1})
		return pos, nil
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(src[pos:], []byte(lit)) {
				t.toks = append(t.toks, jsonToken{kind: lit[0], next: len(t.toks) + 1})
				return pos + len(lit), nil
			}
		}
		return 0, errPayloadSyntax
	}
}

// emit writes the value of token i and returns the index after it.
func (t *tokenizer) emit(enc *msgpack.Encoder, i int) (int, error) {
	tok := t.toks[i]
	switch tok.kind {
	case '{':
		if err := enc.EncodeMapLen(tok.n); err != nil {
			return 0, err
		}
		if !t.keysSorted(i) {
			return tok.next, t.emitSortedMembers(enc, i)
		}
		j := i + 1
		for range tok.n {
			if err := t.emitString(enc, t.toks[j]); err != nil {
				return 0, err
			}
			var err error
			if j, err = t.emit(enc, j+1); err != nil {
				return 0, err
			}
		}
		return tok.next, nil
	case '[':
		if err := enc.EncodeArrayLen(tok.n); err != nil {
			return 0, err
		}
		j := i + 1
		for range tok.n {
			var err error
			if j, err = t.emit(enc, j); err != nil {
				return 0, err
			}
		}
		return tok.next, nil
	case '"':
		return tok.next, t.emitString(enc, tok)
	case '0':
		return tok.next, t.emitNumber(enc, t.src[tok.start:tok.end])
	case 't':
		return tok.next, enc.EncodeBool(true)
	case 'f':
		return tok.next, enc.EncodeBool(false)
	default:
		return tok.next, enc.EncodeNil()
	}
}

// keysSorted reports whether the members of object token i are in strictly
// increasing key order, as they are in canonical JSON.
func (t *tokenizer) keysSorted(i int) bool {
	var prev []byte
	j := i + 1
	for m := range t.toks[i].n {
		key := t.toks[j]
		if key.escaped {
			return false
		}
		raw := t.src[key.start+1 : key.end-1]
		if m > 0 && bytes.Compare(prev, raw) >= 0 {
			return false
		}
		prev = raw
		j = t.toks[j+1].next
	}
	return true
}

// emitSortedMembers writes the members of object token i in key order; it
// serves payloads that are not canonical, so it may allocate.
func (t *tokenizer) emitSortedMembers(enc *msgpack.Encoder, i int) error {
	type member struct {
		key string
		val int
	}
	members := make([]member, 0, t.toks[i].n)
	j := i + 1
	for range t.toks[i].n {
		key, err := t.decodeString(t.toks[j])
		if err != nil {
			return err
		}
		members = append(members, member{key: key, val: j + 1})
		j = t.toks[j+1].next
	}
	// Stable, so that duplicate keys keep their order and the last one still
	// wins when the map is read back.
	slices.SortStableFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	for _, m := range members {
		if err := enc.EncodeString(m.key); err != nil {
			return err
		}
		if _, err := t.emit(enc, m.val); err != nil {
			return err
		}
	}
	return nil
}

func (t *tokenizer) decodeString(tok jsonToken) (string, error) {
	raw := t.src[tok.start:tok.end]
	if !tok.escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errPayloadSyntax
	}
	return s, nil
}

func (t *tokenizer) emitString(enc *msgpack.Encoder, tok jsonToken) error {
	if tok.escaped {
		s, err := t.decodeString(tok)
		if err != nil {
			return err
		}
		return enc.EncodeString(s)
	}
	return t.writeStr(enc, t.src[tok.start+1:tok.end-1])
}

// writeStr writes b as a MessagePack str without converting it to a string
// first (the encoder only takes strings). The header is built in the pooled
// tokenizer so that nothing escapes per call.
func (t *tokenizer) writeStr(enc *msgpack.Encoder, b []byte) error {
	h := t.hdr[:0]
	switch n := len(b); {
	case n < 32:
		h = append(h, 0xa0|byte(n))
	case n <= math.MaxUint8:
		h = append(h, 0xd9, byte(n))
	case n <= math.MaxUint16:
		h = binary.BigEndian.AppendUint16(append(h, 0xda), uint16(n))
	case uint64(n) <= math.MaxUint32:
		h = binary.BigEndian.AppendUint32(append(h, 0xdb), uint32(n))
	default:
		return errors.New("string too long")
	}
	w := enc.Writer()
	if _, err := w.Write(h); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// emitNumber writes a JSON number as an int64 when it is an integer that
// fits, else as a uint64, else as a float64.
func (t *tokenizer) emitNumber(enc *msgpack.Encoder, num []byte) error {
	if n, ok := smallInt(num); ok {
		return enc.EncodeInt(n)
	}
	s := string(num)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return enc.EncodeInt(n)
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return enc.EncodeUint(n)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return errPayloadSyntax
	}
	// Out of range (1e400) gives ±Inf or 0, the nearest float there is.
	return enc.EncodeFloat64(f)
}

// smallInt parses an optionally negative integer of at most 18 digits, the
// common case, without going through strconv.
func smallInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// MessagePack to JSON, for request bodies and payloads. The converter works
// on the whole body in memory, so every length is checked against the bytes
// that remain before anything is read or allocated.

type msgpackReader struct {
	b   []byte
	pos int
}

var errTruncated = errors.New("unexpected end of data")

// msgpackToJSON appends the JSON form of the single MessagePack value in
// data to dst. Trailing bytes are an error.
func msgpackToJSON(dst, data []byte) ([]byte, error) {
	r := msgpackReader{b: data}
	dst, err := r.value(dst, 0)
	if err != nil {
		return nil, err
	}
	if r.pos != len(data) {
		return nil, fmt.Errorf("%d bytes of trailing data after the value", len(data)-r.pos)
	}
	return dst, nil
}

func (r *msgpackReader) next(n int) ([]byte, error) {
	if n < 0 || n > len(r.b)-r.pos {
		return nil, errTruncated
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// length reads a big-endian length of size bytes (1, 2 or 4).
func (r *msgpackReader) length(size int) (int, error) {
	b, err := r.next(size)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return int(b[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(b)), nil
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(r.b)) {
		return 0, errTruncated // also keeps int conversion safe on 32-bit
	}
	return int(n), nil
}

func (r *msgpackReader) value(dst []byte, depth int) ([]byte, error) {
	c, err := r.next(1)
	if err != nil {
		return nil, err
	}
	code := c[0]
	switch {
	case code <= 0x7f: // positive fixint
		return strconv.AppendUint(dst, uint64(code), 10), nil
	case code >= 0xe0: // negative fixint
		return strconv.AppendInt(dst, int64(int8(code)), 10), nil
	case code <= 0x8f: // fixmap
		return r.object(dst, int(code&0x0f), depth)
	case code <= 0x9f: // fixarray
		return r.array(dst, int(code&0x0f), depth)
	case code <= 0xbf: // fixstr
		return r.str(dst, int(code&0x1f))
	}
	switch code {
	case 0xc0:
		return append(dst, "null"...), nil
	case 0xc2:
		return append(dst, "false"...), nil
	case 0xc3:
		return append(dst, "true"...), nil
	case 0xc4, 0xc5, 0xc6:
		return nil, errors.New("binary data is not supported")
	case 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return nil, errors.New("extension types are not supported")
	case 0xca:
		b, err := r.next(4)
		if err != nil {
			return nil, err
		}
		return appendJSONFloat(dst, float64(math.Float32frombits(binary.BigEndian.Uint32(b))), 32)
	case 0xcb:
		b, err := r.next(8)
		if err != nil {
			return nil, err
		}
		return appendJSONFloat(dst, math.Float64frombits(binary.BigEndian.Uint64(b)), 64)
	case 0xcc, 0xcd, 0xce, 0xcf:
		b, err := r.next(1 << (code - 0xcc))
		if err != nil {
			return nil, err
		}
		return strconv.AppendUint(dst, readUint(b), 10), nil
	case 0xd0, 0xd1, 0xd2, 0xd3:
		b, err := r.next(1 << (code - 0xd0))
		if err != nil {
			return nil, err
		}
		u := readUint(b)
		shift := 64 - 8*len(b) // sign-extend
		return strconv.AppendInt(dst, int64(u<<shift)>>shift, 10), nil
	case 0xd9, 0xda, 0xdb:
		n, err := r.length(1 << (code - 0xd9))
		if err != nil {
			return nil, err
		}
		return r.str(dst, n)
	case 0xdc, 0xdd:
		n, err := r.length(2 << (code - 0xdc))
		if err != nil {
			return nil, err
		}
		return r.array(dst, n, depth)
	case 0xde, 0xdf:
		n, err := r.length(2 << (code - 0xde))
		if err != nil {
			return nil, err
		}
		return r.object(dst, n, depth)
	}
	return nil, fmt.Errorf("invalid code 0x%02x", code)
}

func readUint(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	}
	return binary.BigEndian.Uint64(b)
}

func (r *msgpackReader) array(dst []byte, n, depth int) ([]byte, error) {
	if depth >= maxDepth {
		return nil, errors.New("nested too deeply")
	}
	if n > len(r.b)-r.pos {
		return nil, errTruncated // every element takes at least one byte
	}
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = r.value(dst, depth+1); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

func (r *msgpackReader) object(dst []byte, n, depth int) ([]byte, error) {
	if depth >= maxDepth {
		return nil, errors.New("nested too deeply")
	}
	if n > (len(r.b)-r.pos)/2 {
		return nil, errTruncated // every member takes at least two bytes
	}
	dst = append(dst, '{')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		c, err := r.next(1)
		if err != nil {
			return nil, err
		}
		var size int
		switch code := c[0]; {
		case code >= 0xa0 && code <= 0xbf:
			size = int(code & 0x1f)
		case code >= 0xd9 && code <= 0xdb:
			if size, err = r.length(1 << (code - 0xd9)); err != nil {
				return nil, err
			}
		default:
			return nil, errors.New("map keys must be strings")
		}
		if dst, err = r.str(dst, size); err != nil {
			return nil, err
		}
		dst = append(dst, ':')
		if dst, err = r.value(dst, depth+1); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func (r *msgpackReader) str(dst []byte, n int) ([]byte, error) {
	b, err := r.next(n)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(b) {
		return nil, errors.New("string is not valid UTF-8")
	}
	return appendJSONString(dst, b), nil
}

// appendJSONString quotes valid UTF-8 as a JSON string. Like the JSON
// encoder set up in this file, it leaves <, > and & as they are.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c >= 0x20:
			dst = append(dst, c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return append(dst, '"')
}

// appendJSONFloat writes a finite float as a JSON number in the layout of
// serde_json (ryu), as Zizq prints floats: plain digits with ".0" for whole
// numbers up to 16 digits ("4.0", "1000000000000000.0"), "0.000ddd" down to
// four leading zeros, exponents beyond ("1e21", "1.5e-7"). The number always
// reads back as a float, so a float payload value stays a float on its way
// back to MessagePack. bits is 32 for float32 values, which keep their
// shortest float32 digits ("0.1", not "0.10000000149011612").
func appendJSONFloat(dst []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errors.New("NaN and infinite numbers are not supported")
	}
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, bits) // -d.ddde±xx
	if sci[0] == '-' {
		dst = append(dst, '-')
		sci = sci[1:]
	}
	mant, expText, _ := bytes.Cut(sci, []byte{'e'})
	exp, _ := strconv.Atoi(string(expText))
	var digitBuf [24]byte
	digits := append(digitBuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	n := len(digits)
	point := exp + 1 // the value is 0.<digits> × 10^point
	switch {
	case point >= n && point <= 16:
		dst = append(dst, digits...)
		for range point - n {
			dst = append(dst, '0')
		}
		dst = append(dst, '.', '0')
	case point > 0 && point <= 16:
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		dst = append(dst, digits[point:]...)
	case point > -5 && point <= 0:
		dst = append(dst, '0', '.')
		for range -point {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if n > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		dst = strconv.AppendInt(dst, int64(point-1), 10)
	}
	return dst, nil
}
