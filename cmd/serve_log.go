package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Logs on disk, as Zizq's --log-to-disk: <root-dir>/log/zizq.log (or
// --log-dir), a new file once the current one would pass --log-max-size
// and, with --log-rotation daily or hourly, at the first write of each new
// day or hour (local time); --log-max-files rotated files are kept.
// Rotation is lumberjack's: rotated files are named zizq-<time>.log
// (Zizq's are zizq.log.1, .2, ...), and sizes count in whole MiB.

// Values of --log-rotation.
const (
	rotateDaily  = "daily"
	rotateHourly = "hourly"
	rotateNever  = "never"
)

const logFileName = "zizq.log"

func (o *ServeOptions) checkLogFlags() error {
	switch o.LogRotation {
	case rotateDaily, rotateHourly, rotateNever:
	default:
		return usageError{fmt.Errorf("invalid --log-rotation %q: use daily, hourly or never", o.LogRotation)}
	}
	// lumberjack keeps every file when told to keep none.
	if o.LogMaxFiles < 1 {
		return usageError{fmt.Errorf("invalid --log-max-files %d: use 1 or more", o.LogMaxFiles)}
	}
	if o.LogMaxSize < 1 {
		return usageError{fmt.Errorf("invalid --log-max-size %s: use at least 1MiB", formatSize(o.LogMaxSize))}
	}
	return nil
}

// logDir is where log files go, "" for standard error.
func (o *ServeOptions) logDir() string {
	switch {
	case o.LogDir != "":
		return o.LogDir
	case o.LogToDisk:
		return filepath.Join(o.RootDir, "log")
	}
	return ""
}

// logWriter returns where logs go and how to close it.
func (o *ServeOptions) logWriter(stderr io.Writer) (io.Writer, func(), error) {
	dir := o.logDir()
	if dir == "" {
		return stderr, func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("log directory: %w", err)
	}
	const mib = 1 << 20
	lj := &lumberjack.Logger{
		Filename:   filepath.Join(dir, logFileName),
		MaxSize:    int(max(1, (o.LogMaxSize+mib-1)/mib)),
		MaxBackups: o.LogMaxFiles,
		LocalTime:  true,
	}
	w := &rotatingLog{lj: lj, every: o.LogRotation, now: time.Now}
	return w, func() { _ = lj.Close() }, nil
}

// rotatingLog adds rotation by time to lumberjack's by size: the first
// write in a new period starts a new file.
type rotatingLog struct {
	mu     sync.Mutex
	lj     *lumberjack.Logger
	every  string
	now    func() time.Time
	period string // of the current file's writes
}

func (r *rotatingLog) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.periodOf(r.now()); p != r.period {
		if r.period != "" {
			if err := r.lj.Rotate(); err != nil {
				return 0, err
			}
		}
		r.period = p
	}
	return r.lj.Write(p)
}

func (r *rotatingLog) periodOf(t time.Time) string {
	switch r.every {
	case rotateDaily:
		return t.Format("2006-01-02")
	case rotateHourly:
		return t.Format("2006-01-02T15")
	}
	return "-"
}
