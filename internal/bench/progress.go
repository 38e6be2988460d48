package bench

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress is the progress line, drawn only when there is a writer (a
// terminal) to draw it on.
type progress struct {
	w    io.Writer
	done chan struct{}
	once sync.Once

	mu  sync.Mutex // guards msg and the writes to w
	msg func() string
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, done: make(chan struct{})}
	if p.w != nil {
		go p.loop()
	}
	return p
}

// set shows msg (read on every redraw) from now on.
func (p *progress) set(msg func() string) {
	p.mu.Lock()
	p.msg = msg
	p.mu.Unlock()
}

// setf shows a fixed message.
func (p *progress) setf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.set(func() string { return s })
}

// stop ends the redraws and clears the line.
func (p *progress) stop() {
	p.once.Do(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		close(p.done)
		if p.w != nil {
			fmt.Fprint(p.w, "\r\033[K")
		}
	})
}

func (p *progress) loop() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			select {
			case <-p.done:
			default:
				if p.msg != nil {
					fmt.Fprintf(p.w, "\r\033[Kzizq bench: %s", p.msg())
				}
			}
			p.mu.Unlock()
		}
	}
}
