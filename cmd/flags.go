package cmd

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const envAnnotation = "zizq_env"

// withEnv declares that flag name falls back to the environment variable.
func withEnv(fs *pflag.FlagSet, name, env string) {
	f := fs.Lookup(name)
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[envAnnotation] = []string{env}
	f.Usage += fmt.Sprintf(" (env %s)", env)
}

// applyEnv sets every flag not given on the command line from its
// environment variable, if set. A bad value is a usage error naming the
// variable.
func applyEnv(c *cobra.Command) error {
	var err error
	visit := func(f *pflag.Flag) {
		env := f.Annotations[envAnnotation]
		if err != nil || len(env) == 0 || f.Changed {
			return
		}
		// An empty variable counts as unset: ZIZQ_HOST= must not mean
		// "every interface".
		if v := os.Getenv(env[0]); v != "" {
			if e := f.Value.Set(v); e != nil {
				err = usageError{fmt.Errorf("invalid value %q for %s: %w", v, env[0], e)}
			}
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return err
}

// ParseDuration reads Go durations plus a "d" suffix for days; a bare
// integer means milliseconds. It is the one duration syntax of every flag.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("duration must not be negative")
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	if strings.HasSuffix(s, "d") && !strings.HasSuffix(s, "nd") {
		days, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err != nil || days < 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	if i := strings.Index(s, "d"); i > 0 && !strings.Contains(s[:i], "n") {
		head, tail := s[:i+1], s[i+1:]
		d1, err1 := ParseDuration(head)
		d2, err2 := time.ParseDuration(tail)
		if err1 == nil && err2 == nil {
			return d1 + d2, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use e.g. 1500, 30s, 5m, 7d)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration must not be negative")
	}
	return d, nil
}

// durationValue is a pflag.Value using ParseDuration.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }

func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var((*durationValue)(p), name, usage)
}

// ParseSize reads byte sizes: a bare integer, or a number with B, KB, MB,
// GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(strings.ToLower(s), strings.ToLower(u.suffix)) {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q (use e.g. 16MiB, 256MB, 1048576)", s)
	}
	return int64(n * float64(mult)), nil
}

type sizeValue int64

func (v *sizeValue) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	*v = sizeValue(n)
	return nil
}

func (v *sizeValue) String() string { return strconv.FormatInt(int64(*v), 10) }
func (v *sizeValue) Type() string   { return "size" }

func sizeFlag(fs *pflag.FlagSet, p *int64, name string, def int64, usage string) {
	*p = def
	fs.Var((*sizeValue)(p), name, usage)
}
