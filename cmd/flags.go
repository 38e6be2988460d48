package cmd

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zizq/zizq/api"
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

// maxDays is the most days a time.Duration holds.
const maxDays = int64(math.MaxInt64 / (24 * time.Hour))

// daysPrefix is a day count at the start of a duration: "7d", "1.5d1h".
var daysPrefix = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)d`)

// ParseDuration reads Go durations plus a "d" prefix for days ("7d",
// "1.5d", "1d12h"); a bare integer means milliseconds. It is the one
// duration syntax of every flag. Negative durations, NaN or infinite days
// and anything past time.Duration's range (about 106751 days) are errors.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	invalid := fmt.Errorf("invalid duration %q (use e.g. 1500, 30s, 5m, 7d)", s)
	tooLong := fmt.Errorf("duration %q is too long (at most %dd)", s, maxDays)
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case err == nil && ms < 0:
			return 0, errNegativeDuration
		case err != nil || ms > int64(math.MaxInt64/time.Millisecond):
			if strings.HasPrefix(s, "-") {
				return 0, errNegativeDuration
			}
			return 0, tooLong
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	var days time.Duration
	if m := daysPrefix.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, invalid
		}
		if n > float64(maxDays) {
			return 0, tooLong
		}
		days = time.Duration(n * float64(24*time.Hour))
		if s = s[len(m[0]):]; s == "" {
			return days, nil
		}
		if s[0] == '-' || s[0] == '+' {
			return 0, invalid // "1d-5h"
		}
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, invalid
	case d < 0:
		return 0, errNegativeDuration
	case d > math.MaxInt64-days:
		return 0, tooLong
	}
	return days + d, nil
}

var errNegativeDuration = errors.New("duration must not be negative")

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

func (d *durationValue) String() string { return formatDuration(time.Duration(*d)) }

// formatDuration writes a duration as ParseDuration reads it, whole days
// as days (7d rather than 168h0m0s).
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}
func (d *durationValue) Type() string { return "duration" }

func durationFlag(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var((*durationValue)(p), name, usage)
}

// sizeUnits are the suffixes of sizes, matched without regard to case.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}

// decimalNumber is the number of a size: digits, a fraction, an exponent of
// at most three digits (so that "1e999999999" cannot eat the memory). No
// sign, hex, NaN or infinity.
var decimalNumber = regexp.MustCompile(`^(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$`)

// ParseSize reads byte sizes: a decimal number, bare (bytes) or with B,
// KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024). Fractions
// are allowed where they come to whole bytes (1.5KiB is 1536): 1.5 or
// 0.1KiB are errors, as are negative sizes and sizes past 2^63-1 bytes.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(strings.ToLower(s), strings.ToLower(u.suffix)) {
			num, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	n, ok := new(big.Rat).SetString(num)
	if !ok || !decimalNumber.MatchString(num) {
		return 0, fmt.Errorf("invalid size %q (use e.g. 16MiB, 256MB, 1048576)", s)
	}
	n.Mul(n, new(big.Rat).SetInt64(mult))
	switch {
	case !n.IsInt():
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	case !n.Num().IsInt64():
		return 0, fmt.Errorf("size %q is too large (at most %d bytes)", s, int64(math.MaxInt64))
	}
	return n.Num().Int64(), nil
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

func (v *sizeValue) String() string { return formatSize(int64(*v)) }

// formatSize writes a size as ParseSize reads it, in the largest unit,
// binary or decimal, that divides it: 16MiB rather than 16777216, 100MB
// rather than 100000000, else in bytes (1500B). Zero is 0.
func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
func (v *sizeValue) Type() string { return "size" }

// optionalSize is a size flag whose default is worked out from other
// settings: Given reports whether a value was given, by the flag or by its
// variable (both go through Set). Unset, it reads "auto".
type optionalSize struct {
	N     int64
	Given bool
}

func (v *optionalSize) Set(s string) error {
	n, err := ParseSize(s)
	if err != nil {
		return err
	}
	v.N, v.Given = n, true
	return nil
}

func (v *optionalSize) String() string {
	if !v.Given {
		return "auto"
	}
	return formatSize(v.N)
}

func (v *optionalSize) Type() string { return "size" }

func sizeFlag(fs *pflag.FlagSet, p *int64, name string, def int64, usage string) {
	*p = def
	fs.Var((*sizeValue)(p), name, usage)
}

// nameValue is a pflag.Value of a queue name, a job type or a budget key:
// a value the server's name rules refuse is a flag error, so a usage error
// before any request is sent.
type nameValue struct {
	p     *string
	field string // as the server's errors name it: "queue", "budget key"
}

func (v *nameValue) Set(s string) error {
	if err := api.ValidateName(v.field, s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

func (v *nameValue) String() string { return *v.p }
func (v *nameValue) Type() string   { return "string" }

// nameFlag declares a name flag (see nameValue) with an optional
// one-letter shorthand.
func nameFlag(fs *pflag.FlagSet, p *string, name, shorthand, field, usage string) {
	fs.VarP(&nameValue{p: p, field: field}, name, shorthand, usage)
}

// nameListValue is a repeatable, comma-separated list of names (see
// nameValue), each checked as it is read. A name cannot hold a comma, so
// splitting on commas loses nothing.
type nameListValue struct {
	p       *[]string
	field   string
	changed bool
}

func (v *nameListValue) Set(s string) error {
	if !v.changed {
		*v.p = nil // the first value replaces the default
		v.changed = true
	}
	for _, name := range strings.Split(s, ",") {
		if err := api.ValidateName(v.field, name); err != nil {
			return err
		}
		*v.p = append(*v.p, name)
	}
	return nil
}

func (v *nameListValue) String() string { return strings.Join(*v.p, ",") }

// Type is pflag's name of a string list, so that help and completion
// treat the flag as one.
func (v *nameListValue) Type() string { return "stringSlice" }

// nameListFlag declares a list of names (see nameListValue).
func nameListFlag(fs *pflag.FlagSet, p *[]string, name, shorthand, field, usage string) {
	fs.VarP(&nameListValue{p: p, field: field}, name, shorthand, usage)
}
