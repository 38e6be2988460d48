package cmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/spf13/pflag"
)

// flagError marks a flag mistake as a usage error, and says the range of a
// number out of range rather than the parser's complaint.
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	var re rangeError
	if errors.As(err, &ive) && errors.As(err, &re) {
		return usageError{fmt.Errorf("--%s must be %s, got %q", ive.GetFlag().Name, re, ive.GetValue())}
	}
	return usageError{err}
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
