package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zizq/zizq/api"
)

// writeJSON prints a wire object as the server renders it (same field
// order, payloads verbatim), indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	b, err := api.Marshal(api.JSON, v)
	if err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return fmt.Errorf("encode output: %w", err)
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// printDeleted prints what every delete prints: with -o json the server's
// {"deleted":n} object of a bulk delete, so that scripts read one shape;
// as a table a line that names what was deleted, "Deleted budget 'k'." or
// "Deleted 3 jobs.", so that a delete is never silent.
func printDeleted(f *Factory, n int64, what string) error {
	if f.JSON() {
		return writeJSON(f.IO.Out, api.Deleted{Deleted: n})
	}
	_, err := fmt.Fprintf(f.IO.Out, "Deleted %s.\n", what)
	return err
}

// countOf writes a count with its noun: "1 job", "3 jobs", "0 jobs".
func countOf(n int64, one, many string) string {
	return strconv.FormatInt(n, 10) + " " + plural(int(n), one, many)
}

// quoteName writes a budget key or a cron name the way the server's
// messages do: 'name'.
func quoteName(s string) string { return "'" + s + "'" }

// table writes aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }
func (t *table) flush() error        { return t.tw.Flush() }

// formatMs writes a duration in milliseconds the way the flags read it:
// "1h", "90s" as "1m30s", whole days as "7d".
func formatMs(ms int64) string {
	if ms <= 0 {
		return "0s"
	}
	d := time.Duration(ms) * time.Millisecond
	const day = 24 * time.Hour
	if d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	var b strings.Builder
	for _, u := range []struct {
		d time.Duration
		s string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.s)
			d -= n * u.d
		}
	}
	return b.String()
}

// formatTime writes a timestamp in milliseconds in local time.
func formatTime(ms uint64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(int64(ms)).Format("2006-01-02 15:04:05")
}

// formatUntil writes how long until a timestamp in milliseconds: "in 2.5s",
// or "now" once it has passed.
func formatUntil(ms int64, now time.Time) string {
	d := time.UnixMilli(ms).Sub(now)
	if d <= 0 {
		return "now"
	}
	if d < 10*time.Second {
		d = d.Round(100 * time.Millisecond)
		if d == 0 {
			return "now"
		}
		return "in " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	}
	return "in " + formatMs(d.Round(time.Second).Milliseconds())
}

// formatTokens writes a token count rounded to 3 decimals, without
// trailing zeros.
func formatTokens(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// formatBindings writes a job's budgets as "key:cost, key:cost".
func formatBindings(bs []api.Binding) string {
	if len(bs) == 0 {
		return "-"
	}
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.Key + ":" + strconv.FormatInt(b.Cost, 10)
	}
	return strings.Join(parts, ",")
}
