package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestListenLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		url  string
		ok   bool
	}{
		{"Listening on http://127.0.0.1:4321 (primary)", "http://127.0.0.1:4321", true},
		{"Listening on https://[::1]:7890 (primary)", "https://[::1]:7890", true},
		{"Listening on http://127.0.0.1:9000 (metrics)", "", false},
		{"level=WARN msg=hello", "", false},
	}
	for _, tt := range tests {
		url, ok := listenLine(tt.line)
		require.Equal(t, tt.ok, ok, tt.line)
		require.Equal(t, tt.url, url, tt.line)
	}
}

func TestMostInWindow(t *testing.T) {
	t.Parallel()
	stamps := []int64{0, 0, 0, 5, 9, 10, 19, 20, 100}
	require.Equal(t, 5, mostInWindow(stamps, 10), "0..9 holds five stamps")
	require.Equal(t, 3, mostInWindow(stamps, 1))
	require.Equal(t, 8, mostInWindow(stamps, 21))
	require.Equal(t, 9, mostInWindow(stamps, 101))
	require.Equal(t, 0, mostInWindow(nil, 10))
}

func TestRateOf(t *testing.T) {
	t.Parallel()
	var even []time.Duration
	for k := range 1000 {
		even = append(even, time.Duration(k)*time.Millisecond)
	}
	require.InDelta(t, 1000, rateOf(even), 1e-6)
	// One late first delivery barely moves the slope; it would move the
	// rate between the endpoints by 2%.
	late := append([]time.Duration{20 * time.Millisecond}, even[1:]...)
	require.InDelta(t, 1000, rateOf(late), 2)
	require.Zero(t, rateOf(even[:1]))
}

func TestLatencyOf(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for k := 100; k >= 1; k-- {
		d = append(d, time.Duration(k)*time.Millisecond)
	}
	require.Equal(t, Latency{P50: 50, P95: 95, P99: 99, Max: 100}, latencyOf(d, true))
	require.Equal(t, Latency{P50: 50, P99: 99, Max: 100}, latencyOf(d, false))
	require.Equal(t, Latency{}, latencyOf(nil, true))
}

func TestRunner_Payload(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 10, 64, 128, 4096} {
		b := &runner{o: &Options{PayloadSize: size}}
		p := b.payload(123456, 987654321*time.Nanosecond)
		got, err := decodePayload(p)
		require.NoError(t, err)
		require.Equal(t, int64(123456), got.I)
		require.Equal(t, int64(987654321), got.T)
		if size >= 64 {
			require.Len(t, p, size)
		}
	}
}
