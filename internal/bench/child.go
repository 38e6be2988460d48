package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// childStartTimeout bounds how long a child server may take to listen.
const childStartTimeout = 30 * time.Second

// childSpec says how to start a child server.
type childSpec struct {
	binary     string // "": this very executable
	commitMode string // "": the server's default
	port       int    // 0: a free one
	// adminPort is the admin port's; 0: none (--no-admin, which older
	// servers accept too).
	adminPort int
}

// childServer is a `zizq serve` started by bench on a temporary root. It
// runs one process at a time: restart starts another on the same root with
// the same binary and flags.
type childServer struct {
	binary string   // absolute path of the executable
	args   []string // of the serve command
	root   string
	url    string
	admin  string   // the admin port's URL, "" without one
	proc   *process // the latest process
}

// process is one run of the child server's binary.
type process struct {
	cmd       *exec.Cmd
	stderr    *tailBuffer
	listening chan string   // receives the URL of its "Listening on" line
	done      chan struct{} // closed once the process has exited
	err       error         // its exit status, once done
}

// serverBinary resolves the executable of the child server: path, looked
// up like a command, or this very executable when path is empty.
func serverBinary(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find the zizq executable: %w", err)
		}
		return exe, nil
	}
	exe, err := exec.LookPath(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(exe)
}

// startChild starts `zizq serve` on a temporary root and 127.0.0.1, and
// waits until it serves.
func startChild(ctx context.Context, spec childSpec) (*childServer, error) {
	exe, err := serverBinary(spec.binary)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "zizq-bench-")
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--host", "127.0.0.1", "--port", strconv.Itoa(spec.port), "--root-dir", root, "--log-level", "warn"}
	if spec.commitMode != "" {
		args = append(args, "--default-commit-mode", spec.commitMode)
	}
	s := &childServer{binary: exe, root: root}
	if spec.adminPort > 0 {
		args = append(args, "--admin-port", strconv.Itoa(spec.adminPort))
		s.admin = "http://127.0.0.1:" + strconv.Itoa(spec.adminPort)
	} else {
		args = append(args, "--no-admin")
	}
	s.args = args
	if s.proc, err = s.spawn(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	if s.url, err = s.proc.waitListening(ctx); err != nil {
		_ = s.stop()
		return nil, err
	}
	return s, nil
}

// spawn starts a process of the child's binary and flags; it does not wait
// for it to listen.
func (s *childServer) spawn() (*process, error) {
	p := &process{stderr: &tailBuffer{max: 4096}, listening: make(chan string, 1), done: make(chan struct{})}
	p.cmd = exec.Command(s.binary, s.args...)
	// The server's own defaults, whatever the environment configures.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ZIZQ_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start zizq serve: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := listenLine(sc.Text()); ok {
				select {
				case p.listening <- addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitListening waits until the process says it serves, and returns its
// URL.
func (p *process) waitListening(ctx context.Context) (string, error) {
	select {
	case url := <-p.listening:
		return url, nil
	case <-p.done:
		return "", fmt.Errorf("zizq serve exited before listening: %s", p.exited())
	case <-time.After(childStartTimeout):
		return "", fmt.Errorf("zizq serve did not listen within %s", childStartTimeout)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// freePort returns a port of 127.0.0.1 that is free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// pid is the process ID of the child's latest process.
func (s *childServer) pid() int { return s.proc.cmd.Process.Pid }

// kill ends the child's process with SIGKILL, so that no shutdown code
// runs, and waits until it has exited. The root stays.
func (s *childServer) kill() error {
	if err := s.proc.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill zizq serve: %w", err)
	}
	<-s.proc.done
	return nil
}

// restart starts the child again on the same root with the same binary
// and flags, after kill. It does not wait for it to listen.
func (s *childServer) restart() error {
	p, err := s.spawn()
	if err != nil {
		return err
	}
	s.proc = p
	return nil
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

// exited describes how the child's latest process ended, with the tail of
// its log; "" while it runs.
func (s *childServer) exited() string { return s.proc.exited() }

func (p *process) exited() string {
	select {
	case <-p.done:
	case <-time.After(100 * time.Millisecond):
		return ""
	}
	msg := "exit status 0"
	if p.err != nil {
		msg = p.err.Error()
	}
	if tail := strings.TrimSpace(p.stderr.String()); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// stop shuts the child down (an interrupt, then a kill after 15 s) and
// removes its root.
func (s *childServer) stop() error {
	p := s.proc
	select {
	case <-p.done:
	default:
		if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
			_ = p.cmd.Process.Kill()
		}
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
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
