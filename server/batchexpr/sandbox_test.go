package batchexpr_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/server/batchexpr"
)

// newSandbox returns a sandbox of test workers (this test binary) that
// counts the workers it starts. Its deadline is a minute: a test of
// another limit must meet that limit however slow the machine is; the
// tests of the deadline set their own.
func newSandbox(t *testing.T, tune func(*batchexpr.SandboxOptions)) (*batchexpr.Sandbox, *atomic.Int32) {
	t.Helper()
	var starts atomic.Int32
	exe, err := os.Executable()
	require.NoError(t, err)
	o := batchexpr.SandboxOptions{
		Workers: 2,
		Limits:  batchexpr.Limits{Timeout: time.Minute, MaxPayloadBytes: 1 << 20},
		Command: func() *exec.Cmd {
			starts.Add(1)
			return exec.Command(exe, "-test.run=^$")
		},
		Logger: slog.New(slog.DiscardHandler),
	}
	if tune != nil {
		tune(&o)
	}
	s := batchexpr.NewSandbox(o)
	t.Cleanup(s.Close)
	return s, &starts
}

var (
	sumArrays = batchexpr.Config{When: "true", Fold: "$existing + $new"}
	ctx       = context.Background()
)

func TestSandbox_Run(t *testing.T) {
	t.Parallel()
	s, starts := newSandbox(t, nil)

	a, err := s.Run(ctx, batchexpr.Task{Check: &sumArrays, Into: &sumArrays, Existing: []byte("[1]"), New: []byte("[2]")})
	require.NoError(t, err)
	require.Equal(t, batchexpr.Answer{Folds: true, Payload: []byte("[1,2]")}, a)

	a, err = s.Run(ctx, batchexpr.Task{Check: &sumArrays, New: []byte("[2]")})
	require.NoError(t, err)
	require.Equal(t, batchexpr.Answer{}, a, "a dry run alone answers nothing more")

	never := batchexpr.Config{When: "false", Fold: "$new"}
	a, err = s.Run(ctx, batchexpr.Task{Into: &never, Existing: []byte("[1]"), New: []byte("[2]")})
	require.NoError(t, err)
	require.False(t, a.Folds)

	bad := batchexpr.Config{When: "true", Fold: "$existing, $new"}
	_, err = s.Run(ctx, batchexpr.Task{Check: &bad, New: []byte("{}")})
	require.EqualError(t, err, "batch dry-run: fold: fold expression produced more than one output")
	_, err = s.Run(ctx, batchexpr.Task{Check: &batchexpr.Config{When: "(", Fold: "$new"}, New: []byte("{}")})
	var e *batchexpr.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, batchexpr.StageExpression, e.Stage)
	require.EqualValues(t, 1, starts.Load(), "refusals keep the worker")

	_, err = s.Run(ctx, batchexpr.Task{Check: &sumArrays, New: make([]byte, 1<<20+1)})
	require.EqualError(t, err, "batch dry-run: payload of 1048577 bytes exceeds the 1048576-byte limit")
}

// hostileCase is a program a worker must not survive or must stop.
type hostileCase struct {
	// err is the refusal's prefix; orErr, when set, another that may come
	// instead (which limit a program meets first can depend on the load).
	fold, err, orErr string
	// killed: the worker dies of it; either: it may die or time out,
	// depending on the machine's speed.
	killed, either bool
	// deadline, when set, replaces the minute of newSandbox: for the
	// programs that are to run into it.
	deadline time.Duration
}

// A hostile program costs its worker, never the server: each is refused,
// its worker replaced, and the next task is served. The programs that need
// the workers' address-space limit are in sandbox_limits_test.go, built
// where the limit exists.
func TestSandbox_HostilePrograms(t *testing.T) {
	t.Parallel()
	runHostile(t, map[string]hostileCase{
		"InfiniteLoop": {fold: `def f: f; f`, err: "batch fold failed: fold expression took longer than 1s", deadline: time.Second},
		// Without the address-space limit (a race build, not Linux) it
		// would take 16 GB: the deadline stops it first.
		"GrowingArray": {fold: `[range(1e9)]`, err: "batch fold failed: ", either: true, deadline: time.Second},
		"HugeOutput":   {fold: `"x" * 100000000`, err: "batch fold failed: fold output exceeds the 1048576-byte payload limit"},
	})
}

func runHostile(t *testing.T, cases map[string]hostileCase) {
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, starts := newSandbox(t, func(o *batchexpr.SandboxOptions) {
				o.Workers = 1
				if tc.deadline > 0 {
					o.Limits.Timeout = tc.deadline
				}
			})
			hostile := batchexpr.Config{When: "true", Fold: tc.fold}
			began := time.Now()
			_, err := s.Run(ctx, batchexpr.Task{Into: &hostile, Existing: []byte("[1]"), New: []byte("[2]")})
			var e *batchexpr.Error
			require.ErrorAs(t, err, &e)
			require.True(t, strings.HasPrefix(err.Error(), tc.err) || tc.orErr != "" && strings.HasPrefix(err.Error(), tc.orErr), "got %q", err)
			require.Less(t, time.Since(began), 30*time.Second, "bounded by the deadline and the kill")

			a, err := s.Run(ctx, batchexpr.Task{Into: &sumArrays, Existing: []byte("[1]"), New: []byte("[2]")})
			require.NoError(t, err)
			require.Equal(t, "[1,2]", string(a.Payload))
			want := int32(1)
			if tc.killed {
				want = 2
			}
			if !tc.either {
				require.Equal(t, want, starts.Load(), "a worker is replaced only when it was killed")
			}
		})
	}
}

func TestSandbox_BoundsEvaluationsAtOnce(t *testing.T) {
	t.Parallel()
	s, starts := newSandbox(t, func(o *batchexpr.SandboxOptions) {
		o.Limits.Timeout = 200 * time.Millisecond
	})
	// Copies of one program never seen to work: the general workers take
	// two, the kept one none.
	slow := batchexpr.Config{When: "true", Fold: "def f: f; f"}
	var wg sync.WaitGroup
	var overran atomic.Int32
	for range 6 {
		wg.Go(func() {
			_, err := s.Run(ctx, batchexpr.Task{Into: &slow, Existing: []byte("1"), New: []byte("2")})
			var e *batchexpr.Error
			if errors.As(err, &e) {
				assert.ErrorContains(t, err, "took longer than 200ms")
				overran.Add(1)
				return
			}
			assert.ErrorIs(t, err, batchexpr.ErrBusy, "the deadline ends the wait too")
		})
	}
	wg.Wait()
	require.GreaterOrEqual(t, overran.Load(), int32(2))
	require.EqualValues(t, 2, starts.Load(), "two workers served the six tasks, one at a time each")

	waiting, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Run(waiting, batchexpr.Task{Into: &sumArrays, Existing: []byte("1"), New: []byte("2")})
	if err != nil {
		require.ErrorIs(t, err, context.Canceled, "a cancelled wait for a worker")
	}
}

// A task's deadline counts from its queueing: one that waits for a worker
// as long as the limit is answered then, busy, instead of running a limit
// later (and its program is not blamed for the wait).
func TestSandbox_DeadlineCountsFromQueueing(t *testing.T) {
	t.Parallel()
	const limit = 2 * time.Second
	s, _ := newSandbox(t, func(o *batchexpr.SandboxOptions) {
		o.Workers = 1
		o.Limits.Timeout = limit
	})
	_, err := s.Run(ctx, batchexpr.Task{Check: &sumArrays, New: []byte("[1]")}) // a worker started
	require.NoError(t, err)

	// Two new programs that loop: neither may have the kept worker, so one
	// runs into the deadline while the other waits.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	took := make([]time.Duration, 2)
	for i := range errs {
		loop := batchexpr.Config{When: "true", Fold: fmt.Sprintf("def f%d: f%d; f%d", i, i, i)}
		wg.Go(func() {
			began := time.Now()
			_, errs[i] = s.Run(ctx, batchexpr.Task{Check: &loop, New: []byte("1")})
			took[i] = time.Since(began)
		})
	}
	wg.Wait()
	ran, waited := 0, 1
	if errors.Is(errs[0], batchexpr.ErrBusy) {
		ran, waited = 1, 0
	}
	// The one that ran is refused for its overrun: by the worker itself at
	// its deadline, or, when a loaded machine delays the worker's answer
	// past the grace, by the sandbox that killed it. Both are the program's.
	var refusal *batchexpr.Error
	require.ErrorAs(t, errs[ran], &refusal)
	require.Regexp(t, `^batch dry-run: (fold: fold expression took longer than 2s|evaluation took too long and was stopped)$`, errs[ran].Error())
	require.ErrorIs(t, errs[waited], batchexpr.ErrBusy)
	require.Less(t, took[waited], limit+limit/2, "answered at its deadline, not a limit after it; %v", errs[waited])
}

func TestSandbox_WorkerThatDoesNotStart(t *testing.T) {
	t.Parallel()
	s, _ := newSandbox(t, func(o *batchexpr.SandboxOptions) {
		o.Command = func() *exec.Cmd { return exec.Command("true") }
	})
	_, err := s.Run(ctx, batchexpr.Task{Check: &sumArrays, New: []byte("[1]")})
	require.ErrorContains(t, err, "start batch worker")
	var e *batchexpr.Error
	require.NotErrorAs(t, err, &e, "the server's failure, not the client's")
}

func TestSandbox_CloseEndsWorkers(t *testing.T) {
	t.Parallel()
	var cmds []*exec.Cmd
	var mu sync.Mutex
	exe, err := os.Executable()
	require.NoError(t, err)
	s := batchexpr.NewSandbox(batchexpr.SandboxOptions{
		Workers: 2,
		Limits:  batchexpr.Limits{Timeout: time.Minute},
		Command: func() *exec.Cmd {
			c := exec.Command(exe, "-test.run=^$")
			mu.Lock()
			cmds = append(cmds, c)
			mu.Unlock()
			return c
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, err := s.Run(ctx, batchexpr.Task{Check: &sumArrays, New: []byte("[1]")})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	s.Close()
	require.NotEmpty(t, cmds)
	for _, c := range cmds {
		require.NotNil(t, c.ProcessState, "worker %d was waited for", c.Process.Pid)
	}
	_, err = s.Run(ctx, batchexpr.Task{Check: &sumArrays, New: []byte("[1]")})
	require.Error(t, err)
}

// BenchmarkSandbox_Run measures one task's round trip through a worker: a
// dry run and a fold of small arrays (the shape of zizq-node's
// batchConfig), and the same work in process.
func BenchmarkSandbox_Run(b *testing.B) {
	cfg := batchexpr.Config{When: "(($existing | .) + ($new | .)) | length <= 100", Fold: "$existing | . += ($new | .)"}
	task := batchexpr.Task{Check: &cfg, Into: &cfg, Existing: []byte("[1,2,3,4,5,6,7,8,9,10]"), New: []byte("[11]")}
	b.Run("Sandbox", func(b *testing.B) {
		exe, _ := os.Executable()
		s := batchexpr.NewSandbox(batchexpr.SandboxOptions{Workers: 1, Command: func() *exec.Cmd { return exec.Command(exe, "-test.run=^$") }})
		defer s.Close()
		for b.Loop() {
			if _, err := s.Run(ctx, task); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("InProcess", func(b *testing.B) {
		lim := batchexpr.Limits{Timeout: time.Second, MaxPayloadBytes: 1 << 20}
		p, _ := batchexpr.Compile(cfg)
		for b.Loop() {
			incoming, _ := batchexpr.Decode(task.New)
			existing, _ := batchexpr.Decode(task.Existing)
			if err := p.DryRun(ctx, incoming, lim); err != nil {
				b.Fatal(err)
			}
			if _, _, err := p.Fold(ctx, existing, incoming, lim); err != nil {
				b.Fatal(err)
			}
		}
	})
}
