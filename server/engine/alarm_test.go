package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/store"
)

// alarmLog records the names handed on, with the engine time of each hand-off.
type alarmLog struct {
	mu  sync.Mutex
	got [][]string
	at  []int64
}

func (l *alarmLog) take() ([][]string, []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	got, at := l.got, l.at
	l.got, l.at = nil, nil
	return got, at
}

func withAlarms(t *testing.T) (*testBundle, *alarmLog) {
	tb := setup(t)
	log := &alarmLog{}
	tb.e.OnAlarm(func(names []string) {
		log.mu.Lock()
		defer log.mu.Unlock()
		log.got = append(log.got, names)
		log.at = append(log.at, tb.clk.Now().UnixMilli())
	})
	return tb, log
}

func TestEngine_Alarms(t *testing.T) {
	t.Parallel()
	ms := epoch.UnixMilli()

	t.Run("ComeInTimeOrderFromTheOneTimer", func(t *testing.T) {
		t.Parallel()
		tb, log := withAlarms(t)
		tb.e.SetAlarms(Alarm{"b", ms + 2000}, Alarm{"a", ms + 1000}, Alarm{"c", ms + 2000})
		require.Equal(t, 1, tb.clk.Pending(), "one timer for every deadline")
		next, _ := tb.clk.NextAt()
		require.Equal(t, ms+1000, next.UnixMilli())
		tb.clk.Advance(999 * time.Millisecond)
		got, _ := log.take()
		require.Empty(t, got)
		tb.clk.Advance(5 * time.Second)
		got, at := log.take()
		require.Len(t, got, 2, "each instant is handed on in its own call")
		require.Equal(t, []string{"a"}, got[0])
		require.ElementsMatch(t, []string{"b", "c"}, got[1])
		require.Equal(t, []int64{ms + 1000, ms + 2000}, at, "handed on as each comes")
		require.Empty(t, tb.e.Alarms(), "an alarm that came is gone")
		require.Zero(t, tb.clk.Pending(), "no timer is left running")
	})

	t.Run("MoveAndClear", func(t *testing.T) {
		t.Parallel()
		tb, log := withAlarms(t)
		tb.e.SetAlarms(Alarm{"a", ms + 1000}, Alarm{"b", ms + 3000})
		tb.e.SetAlarms(Alarm{"a", ms + 4000}, Alarm{"b", 0})
		require.Equal(t, []Alarm{{"a", ms + 4000}}, tb.e.Alarms())
		next, _ := tb.clk.NextAt()
		require.Equal(t, ms+4000, next.UnixMilli(), "the timer follows the earliest alarm")
		tb.clk.Advance(3500 * time.Millisecond)
		got, _ := log.take()
		require.Empty(t, got)
		tb.clk.Advance(time.Second)
		got, _ = log.take()
		require.Equal(t, [][]string{{"a"}}, got)
		tb.e.SetAlarms(Alarm{"never-set", 0})
		require.Empty(t, tb.e.Alarms())
	})

	t.Run("PastAlarmComesAtOnce", func(t *testing.T) {
		t.Parallel()
		tb, log := withAlarms(t)
		tb.e.SetAlarms(Alarm{"late", ms - 60_000}, Alarm{"later", ms + 60_000})
		got, _ := log.take()
		require.Equal(t, [][]string{{"late"}}, got, "handed on before SetAlarms returns")
		require.Equal(t, []Alarm{{"later", ms + 60_000}}, tb.e.Alarms())
	})

	t.Run("SharesTheTimerWithJobs", func(t *testing.T) {
		t.Parallel()
		tb, log := withAlarms(t)
		later := ms + 5000
		tb.enqueue(t, spec{queue: "q", readyAt: &later})
		tb.e.SetAlarms(Alarm{"a", ms + 2000})
		require.Equal(t, 1, tb.clk.Pending())
		tb.clk.Advance(2 * time.Second)
		got, _ := log.take()
		require.Equal(t, [][]string{{"a"}}, got)
		next, _ := tb.clk.NextAt()
		require.Equal(t, later, next.UnixMilli(), "the timer moves on to the scheduled job")
	})

	// The alarm that fills the place of one that came or was cleared is
	// put back in order: a due alarm never waits under a later one.
	t.Run("ThreeAlarmsStayInOrder", func(t *testing.T) {
		t.Parallel()
		tb, log := withAlarms(t)
		tb.e.SetAlarms(Alarm{"a", ms + 1000}, Alarm{"b", ms + 2000}, Alarm{"c", ms + 3_600_000})
		tb.clk.Advance(time.Second)
		got, _ := log.take()
		require.Equal(t, [][]string{{"a"}}, got)
		next, _ := tb.clk.NextAt()
		require.Equal(t, ms+2000, next.UnixMilli(), "b is the earliest left")
		tb.clk.Advance(time.Second)
		got, _ = log.take()
		require.Equal(t, [][]string{{"b"}}, got)

		tb.e.SetAlarms(Alarm{"d", ms + 3000}, Alarm{"e", ms + 4000})
		tb.e.SetAlarms(Alarm{"d", 0})
		next, _ = tb.clk.NextAt()
		require.Equal(t, ms+4000, next.UnixMilli(), "clearing the earliest leaves the next earliest on top")
	})

	t.Run("ResetKeepsAlarms", func(t *testing.T) {
		t.Parallel()
		tb, _ := withAlarms(t)
		tb.e.SetAlarms(Alarm{"a", ms + 1000})
		tb.e.Reset()
		require.Equal(t, []Alarm{{"a", ms + 1000}}, tb.e.Alarms())
	})
}

func TestEngine_EnqueueWith(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	fired := store.CronFired("g", "e", 2, 1)
	jobs, _, err := tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Payload: []byte("null")}}, fired)
	require.NoError(t, err)
	require.Equal(t, []store.Op{store.InsertJob(jobs[0].Job), fired}, tb.journal.ops, "one group: the insert, then the extra ops")

	// A refused enqueue journals nothing, extra ops included.
	tb.journal.ops = nil
	_, _, err = tb.e.Enqueue([]NewJob{{Type: "t", Queue: "q", Budgets: bindings("missing", 1)}}, fired)
	require.Error(t, err)
	require.Empty(t, tb.journal.ops)
}
