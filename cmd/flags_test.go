package cmd_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/cmd"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	valid := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1 << 20},
		{"16MiB", 16 << 20},
		{"16 mib", 16 << 20},
		{"256MB", 256e6},
		{"1.5KiB", 1536},
		{"0.5GB", 5e8},
		{"1e3", 1000},
		{"10B", 10},
		{"8GiB", 8 << 30},
		{"9223372036854775807", math.MaxInt64},
	}
	for _, c := range valid {
		t.Run("Valid"+c.in, func(t *testing.T) {
			got, err := cmd.ParseSize(c.in)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	invalid := []struct{ name, in, msg string }{
		{"Empty", "", `invalid size ""`},
		{"NaN", "NaN", `invalid size "NaN"`},
		{"Inf", "Inf", `invalid size "Inf"`},
		{"InfUnit", "infKiB", `invalid size "infKiB"`},
		{"Negative", "-1", `invalid size "-1"`},
		{"NegativeZeroFraction", "-0.5KiB", `invalid size "-0.5KiB"`},
		{"Huge", "1e30", `size "1e30" is too large`},
		{"HugeUnit", "9000000000GiB", `size "9000000000GiB" is too large`},
		{"JustPastInt64", "9223372036854775808", `size "9223372036854775808" is too large`},
		{"FractionalBytes", "1.5", `size "1.5" is not a whole number of bytes`},
		{"FractionalBytesUnit", "0.1KiB", `size "0.1KiB" is not a whole number of bytes`},
		{"Ratio", "1/2", `invalid size "1/2"`},
		{"Hex", "0x10", `invalid size "0x10"`},
		{"UnitOnly", "MiB", `invalid size "MiB"`},
	}
	for _, c := range invalid {
		t.Run(c.name, func(t *testing.T) {
			got, err := cmd.ParseSize(c.in)
			require.Error(t, err, "parsed as %d", got)
			require.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	valid := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"1500", 1500 * time.Millisecond},
		{"30s", 30 * time.Second},
		{"5m", 5 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"7d", 7 * 24 * time.Hour},
		{"1.5d", 36 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"2d30m", 48*time.Hour + 30*time.Minute},
		{" 10s ", 10 * time.Second},
		{"106751d", 106751 * 24 * time.Hour},
	}
	for _, c := range valid {
		t.Run("Valid"+c.in, func(t *testing.T) {
			got, err := cmd.ParseDuration(c.in)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
	invalid := []struct{ name, in, msg string }{
		{"Empty", "", "empty duration"},
		{"Garbage", "soon", `invalid duration "soon"`},
		{"NegativeMs", "-5", "duration must not be negative"},
		{"NegativeGo", "-5s", "duration must not be negative"},
		{"NegativeDays", "-1d", `invalid duration "-1d"`},
		{"NegativeTail", "1d-5h", `invalid duration "1d-5h"`},
		{"NaNDays", "NaNd", `invalid duration "NaNd"`},
		{"InfDays", "Infd", `invalid duration "Infd"`},
		{"HexDays", "0x10d", `invalid duration "0x10d"`},
		{"TooManyMs", "9223372036854775", `duration "9223372036854775" is too long`},
		{"MsPastInt64", "99999999999999999999", `duration "99999999999999999999" is too long`},
		{"TooManyDays", "1e300d", `invalid duration "1e300d"`},
		{"TooManyDaysDigits", "106752d", `duration "106752d" is too long`},
		{"DaysPlusTailOverflow", "106751d24h", `duration "106751d24h" is too long`},
		{"GoOverflow", "3000000h", `invalid duration "3000000h"`},
		{"DaysTwice", "1d1d", `invalid duration "1d1d"`},
	}
	for _, c := range invalid {
		t.Run(c.name, func(t *testing.T) {
			got, err := cmd.ParseDuration(c.in)
			require.Error(t, err, "parsed as %v", got)
			require.Contains(t, err.Error(), c.msg)
		})
	}
}
