package api

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Take stream frames (docs/API.md §Stream formats), both directions:
// AppendStreamFrame and Heartbeat write them (the server), a FrameReader reads
// them back (the client, and tests that read a stream).

// MaxFrameBytes bounds the message of one frame a FrameReader accepts, so
// that a corrupt length prefix cannot make a reader allocate gigabytes.
const MaxFrameBytes = 1 << 30

// Stream returns the take stream framing that carries bodies of format f:
// NDJSON for JSON, the MessagePack stream for MessagePack.
func (f Format) Stream() StreamFormat {
	if f == MsgPack {
		return MsgPackStream
	}
	return NDJSON
}

// Message returns the format of the messages a framing carries: JSON in
// NDJSON and SSE, MessagePack in the MessagePack stream.
func (f StreamFormat) Message() Format {
	if f == MsgPackStream {
		return MsgPack
	}
	return JSON
}

// Heartbeat returns the idle frame of a take stream: "\n", four zero bytes,
// or an SSE comment.
func Heartbeat(f StreamFormat) []byte {
	switch f {
	case MsgPackStream:
		return []byte{0, 0, 0, 0}
	case SSE:
		return []byte(": heartbeat\n\n")
	}
	return []byte("\n")
}

// appendFrameJSON appends a frame's JSON: a job by appendJobJSON when it
// can, anything else by the general encoder.
func appendFrameJSON(dst []byte, v any) ([]byte, error) {
	var j *Job
	switch v := v.(type) {
	case *Job:
		j = v
	case Job:
		j = &v
	}
	if j != nil {
		if out, ok := appendJobJSON(dst, j); ok {
			return out, nil
		}
	}
	return appendJSON(dst, v)
}

// AppendStreamFrame appends one take stream frame holding v to dst. On error
// dst is returned unchanged.
func AppendStreamFrame(dst []byte, f StreamFormat, v any) ([]byte, error) {
	start := len(dst)
	var err error
	switch f {
	case NDJSON:
		dst, err = appendFrameJSON(dst, v)
		dst = append(dst, '\n')
	case SSE:
		dst = append(dst, "data: "...)
		dst, err = appendFrameJSON(dst, v)
		dst = append(dst, "\n\n"...)
	case MsgPackStream:
		dst = append(dst, 0, 0, 0, 0)
		dst, err = appendMsgPack(dst, v)
		if err == nil {
			n := len(dst) - start - 4
			if uint64(n) > math.MaxUint32 {
				err = errors.New("stream frame: message too large")
			} else {
				binary.BigEndian.PutUint32(dst[start:], uint32(n))
			}
		}
	default:
		err = fmt.Errorf("stream frame: unknown format %d", f)
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// FrameReader reads the frames of a take stream, the inverse of
// AppendStreamFrame and Heartbeat.
type FrameReader struct {
	r *bufio.Reader
	f StreamFormat
}

// NewFrameReader reads frames of framing f from r, which it buffers.
func NewFrameReader(r io.Reader, f StreamFormat) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), f: f}
}

// Next returns the message of the next frame, in a slice of its own: JSON
// or MessagePack as StreamFormat.Message says. An empty message is a
// heartbeat (in SSE, any event without data). It returns io.EOF when the
// stream ends between frames, an error wrapping io.ErrUnexpectedEOF when it
// ends inside one, and the reader's own errors unchanged.
func (fr *FrameReader) Next() ([]byte, error) {
	switch fr.f {
	case NDJSON:
		return fr.line()
	case MsgPackStream:
		return fr.lengthPrefixed()
	case SSE:
		return fr.event()
	}
	return nil, fmt.Errorf("read take frame: unknown format %d", fr.f)
}

// Job returns the job of the next frame that is not a heartbeat, with the
// errors of Next.
func (fr *FrameReader) Job() (Job, error) {
	for {
		msg, err := fr.Next()
		if err != nil {
			return Job{}, err
		}
		if len(msg) == 0 {
			continue
		}
		var j Job
		if err := Unmarshal(fr.f.Message(), msg, &j); err != nil {
			return Job{}, fmt.Errorf("decode take frame: %w", err)
		}
		return j, nil
	}
}

// line reads an NDJSON frame: a line without its "\n" (or "\r\n").
func (fr *FrameReader) line() ([]byte, error) {
	line, err := fr.r.ReadBytes('\n')
	if err != nil {
		return nil, cutShort(err, len(line) > 0)
	}
	return trimEOL(line), nil
}

// lengthPrefixed reads a MessagePack stream frame: a big-endian u32 length
// and that many bytes.
func (fr *FrameReader) lengthPrefixed() ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(fr.r, n[:]); err != nil {
		return nil, cutShort(err, false) // ReadFull: io.EOF only when nothing was read
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > MaxFrameBytes {
		return nil, fmt.Errorf("take stream frame of %d bytes is too large", size)
	}
	if size > smallFrame {
		// Grown as the bytes arrive, not allocated from the prefix alone.
		msg, err := io.ReadAll(io.LimitReader(fr.r, int64(size)))
		if err == nil && len(msg) < int(size) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, cutShort(err, true)
		}
		return msg, nil
	}
	msg := make([]byte, size)
	if _, err := io.ReadFull(fr.r, msg); err != nil {
		return nil, cutShort(err, true)
	}
	return msg, nil
}

// smallFrame is the largest message read into a buffer of the size its
// prefix announces.
const smallFrame = 64 << 10

// event reads an SSE event up to its blank line: the values of its data
// lines joined by "\n". Comments (": heartbeat") and other fields are
// skipped, as an EventSource does.
func (fr *FrameReader) event() ([]byte, error) {
	var data []byte
	started, hasData := false, false
	for {
		line, err := fr.r.ReadBytes('\n')
		if err != nil {
			return nil, cutShort(err, started || len(line) > 0)
		}
		line = trimEOL(line)
		if len(line) == 0 {
			return data, nil
		}
		started = true
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		if string(field) != "data" {
			continue
		}
		if hasData {
			data = append(data, '\n')
		}
		data = append(data, bytes.TrimPrefix(value, []byte(" "))...)
		hasData = true
	}
}

// cutShort names an end of the stream inside a frame (midFrame, or what
// io.ReadFull reports as such); other errors pass unchanged.
func cutShort(err error, midFrame bool) error {
	if midFrame && errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("take stream cut mid-frame: %w", err)
	}
	return err
}

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}
