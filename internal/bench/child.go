package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// childStartTimeout bounds how long a child server may take to listen.
const childStartTimeout = 30 * time.Second

// childServer is a `zizq serve` started by bench on a temporary root.
type childServer struct {
	cmd    *exec.Cmd
	url    string
	root   string
	stderr *tailBuffer
	done   chan struct{} // closed once the process has exited
	err    error         // its exit status, once done
}

// startChild starts `zizq serve` (this very executable) on a temporary
// root and a free port of 127.0.0.1, and waits until it listens.
func startChild(ctx context.Context, commitMode string) (*childServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the zizq executable: %w", err)
	}
	root, err := os.MkdirTemp("", "zizq-bench-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--host", "127.0.0.1", "--port", "0", "--root-dir", root, "--log-level", "warn"}
	if commitMode != "" {
		args = append(args, "--default-commit-mode", commitMode)
	}
	s := &childServer{root: root, stderr: &tailBuffer{max: 4096}, done: make(chan struct{})}
	s.cmd = exec.Command(exe, args...)
	// The server's own defaults, whatever the environment configures.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZIZQ_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("start zizq serve: %w", err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := listenLine(sc.Text()); ok {
				select {
				case listening <- addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case s.url = <-listening:
		return s, nil
	case <-s.done:
		err = fmt.Errorf("zizq serve exited before listening: %s", s.exited())
	case <-time.After(childStartTimeout):
		err = fmt.Errorf("zizq serve did not listen within %s", childStartTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = s.stop()
	return nil, err
}

// listenLine reads the URL from the server's "Listening on URL (primary)"
// line.
func listenLine(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "Listening on ")
	if !ok {
		return "", false
	}
	url, kind, _ := strings.Cut(rest, " ")
	if kind != "(primary)" {
		return "", false
	}
	return url, true
}

// exited describes how the child ended, with the tail of its log; "" while
// it runs.
func (s *childServer) exited() string {
	select {
	case <-s.done:
	case <-time.After(100 * time.Millisecond):
		return ""
	}
	msg := "exit status 0"
	if s.err != nil {
		msg = s.err.Error()
	}
	if tail := strings.TrimSpace(s.stderr.String()); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// stop shuts the child down (an interrupt, then a kill after 15 s) and
// removes its root.
func (s *childServer) stop() error {
	select {
	case <-s.done:
	default:
		if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
			_ = s.cmd.Process.Kill()
		}
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	if err := os.RemoveAll(s.root); err != nil {
		return fmt.Errorf("remove the temporary root: %w", err)
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
