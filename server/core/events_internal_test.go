package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventOptions_Interval(t *testing.T) {
	t.Parallel()
	o := EventOptions{MinInterval: 100 * time.Millisecond}
	for _, tc := range []struct {
		subs int64
		want time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{readsPerInterval, 100 * time.Millisecond},
		{readsPerInterval + 1, 200 * time.Millisecond},
		{20, 500 * time.Millisecond},
	} {
		require.Equal(t, tc.want, o.interval(tc.subs), "%d subscriptions", tc.subs)
	}
}
