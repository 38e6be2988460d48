package worker

import (
	"bytes"
	"io"
	"sync"
)

// maxLine is the longest line a prefixWriter holds before it writes it
// out anyway, so that a command writing no newline cannot eat the memory.
const maxLine = 64 << 10

// lineSink is the worker's standard error shared by every command: whole
// lines only, one at a time, so that lines of commands running at once
// never mix.
type lineSink struct {
	mu sync.Mutex
	w  io.Writer
}

func newLineSink(w io.Writer) *lineSink { return &lineSink{w: w} }

// writer returns a writer that prefixes each line with prefix and ": ".
func (s *lineSink) writer(prefix string) *prefixWriter {
	return &prefixWriter{sink: s, prefix: []byte(prefix + ": ")}
}

func (s *lineSink) line(prefix, line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	buf := make([]byte, 0, len(prefix)+len(line)+1)
	buf = append(append(append(buf, prefix...), line...), '\n')
	_, _ = s.w.Write(buf)
}

// prefixWriter is one output stream of one command.
type prefixWriter struct {
	sink    *lineSink
	prefix  []byte
	mu      sync.Mutex
	partial []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.partial = append(p.partial, b...)
			if len(p.partial) >= maxLine {
				p.sink.line(p.prefix, p.partial)
				p.partial = p.partial[:0]
			}
			break
		}
		if len(p.partial) > 0 {
			p.sink.line(p.prefix, append(p.partial, b[:i]...))
			p.partial = p.partial[:0]
		} else {
			p.sink.line(p.prefix, b[:i])
		}
		b = b[i+1:]
	}
	return n, nil
}

// flush writes out a last line that had no newline.
func (p *prefixWriter) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.partial) > 0 {
		p.sink.line(p.prefix, p.partial)
		p.partial = p.partial[:0]
	}
}
