package cmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagError is the one handler of flag mistakes, for every command of the
// tree: it marks them as usage errors, says the range of a number out of
// range rather than the parser's complaint, and suggests the flags an
// unknown one may have meant.
func flagError(c *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	var re rangeError
	if errors.As(err, &ive) && errors.As(err, &re) {
		return usageError{fmt.Errorf("--%s must be %s, got %q", ive.GetFlag().Name, re, ive.GetValue())}
	}
	var fre floatRangeError
	if errors.As(err, &ive) && errors.As(err, &fre) {
		return usageError{fmt.Errorf("--%s must be %s, got %q", ive.GetFlag().Name, fre, ive.GetValue())}
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) {
		return usageError{errors.New(didYouMean(err.Error(), flagSuggestions(c, ne)))}
	}
	return usageError{err}
}

// flagSuggestions are the flags of c an unknown flag may have meant: those
// a typo or two away, or that it begins. "-queue", read as the shorthands
// q, u, e…, suggests --queue.
func flagSuggestions(c *cobra.Command, ne *pflag.NotExistError) []string {
	typed := strings.ToLower(ne.GetSpecifiedName())
	if short := ne.GetSpecifiedShortnames(); short != "" {
		if len(short) < 2 {
			return nil // a single letter: too little to go on
		}
		typed = strings.ToLower(short)
	}
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if strings.HasPrefix(f.Name, typed) || editDistance(typed, f.Name) <= 2 {
			out = append(out, "--"+f.Name)
		}
	})
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes (flag
// names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// rangeError is the error of a number outside the range a flag takes; the
// flag error handler turns it into "--priority must be 0..65535".
type rangeError struct{ lo, hi int64 }

func (e rangeError) Error() string {
	if e.hi == math.MaxInt64 {
		return fmt.Sprintf("at least %d", e.lo)
	}
	return fmt.Sprintf("%d..%d", e.lo, e.hi)
}

// integer is what an integer flag can hold.
type integer interface {
	~int | ~int64 | ~uint16 | ~uint32
}

// intRangeValue is a pflag.Value of an integer in [lo, hi].
type intRangeValue[T integer] struct {
	p      *T
	lo, hi int64
}

func (v *intRangeValue[T]) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < v.lo || n > v.hi {
		return rangeError{v.lo, v.hi}
	}
	*v.p = T(n)
	return nil
}

func (v *intRangeValue[T]) String() string { return strconv.FormatInt(int64(*v.p), 10) }
func (v *intRangeValue[T]) Type() string   { return "int" }

// intRangeFlag declares an integer flag that refuses values outside
// [lo, hi] as a usage error naming the range.
func intRangeFlag[T integer](fs *pflag.FlagSet, p *T, name string, lo, hi int64, def T, usage string) {
	*p = def
	fs.Var(&intRangeValue[T]{p: p, lo: lo, hi: hi}, name, usage)
}

// floatRange is the range a fractional flag takes, and how the error of
// a value outside it says so.
type floatRange struct {
	ok   func(float64) bool
	text string
}

// The ranges of a budget's back-off: a decrease strictly between 0 and 1,
// a floor above 0 and at most 1.
var (
	openUnit     = floatRange{func(v float64) bool { return v > 0 && v < 1 }, "above 0 and below 1"}
	halfOpenUnit = floatRange{func(v float64) bool { return v > 0 && v <= 1 }, "above 0 and at most 1"}
)

// floatRangeError is the error of a fraction outside its flag's range
// (NaN and infinities included).
type floatRangeError struct{ text string }

func (e floatRangeError) Error() string { return e.text }

// floatRangeValue is a pflag.Value of a float64 in a range.
type floatRangeValue struct {
	p *float64
	r floatRange
}

func (v *floatRangeValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !v.r.ok(f) {
		return floatRangeError{v.r.text}
	}
	*v.p = f
	return nil
}

func (v *floatRangeValue) String() string { return strconv.FormatFloat(*v.p, 'g', -1, 64) }
func (v *floatRangeValue) Type() string   { return "float" }

// floatRangeFlag declares a fractional flag that refuses values outside r
// as a usage error naming the range.
func floatRangeFlag(fs *pflag.FlagSet, p *float64, name string, r floatRange, def float64, usage string) {
	*p = def
	fs.Var(&floatRangeValue{p: p, r: r}, name, usage)
}
