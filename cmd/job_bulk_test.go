package cmd_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

const (
	foldWhen = `($existing.ids + $new.ids) | length <= 3`
	foldProg = `$existing | .ids += $new.ids`
)

// TestJobEnqueue_Batch: --batch-key with its two programs folds an enqueue
// into the pending job of the key, prints that job's ID and says so on
// standard error; mistakes are usage errors before any request.
func TestJobEnqueue_Batch(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	args := func(ids string) []string {
		return []string{"job", "enqueue", "-q", "push", "-t", "send", "--payload", `{"ids":` + ids + `}`,
			"--batch-key", "tenant-1", "--batch-when", foldWhen, "--batch-fold", foldProg}
	}
	first := c.run(args(`["a"]`)...)
	require.Equal(t, cmd.ExitOK, first.code, first.err)
	require.Empty(t, first.err)
	id := strings.TrimSpace(first.out)

	folded := c.run(args(`["b"]`)...)
	require.Equal(t, cmd.ExitOK, folded.code, folded.err)
	require.Equal(t, id+"\n", folded.out)
	require.Equal(t, fmt.Sprintf("Folded into job %s, the pending job of batch \"tenant-1\".\n", id), folded.err)
	var j api.Job
	c.json(&j, args(`["c"]`)...)
	require.Equal(t, id, j.ID)
	require.True(t, *j.Folded)
	j = api.Job{}
	c.json(&j, "job", "get", id)
	require.JSONEq(t, `{"ids":["a","b","c"]}`, string(j.Payload))
	require.Equal(t, &api.Batch{Key: "tenant-1", When: foldWhen, Fold: foldProg}, j.Batch)

	// The fourth would make four: the batch is sealed, a new job starts.
	next := c.run(args(`["d"]`)...)
	require.NotEqual(t, id+"\n", next.out)

	for _, tc := range []struct {
		msg  string
		args []string
	}{
		{"--batch-key, --batch-when and --batch-fold go together: required flag --batch-fold not set", []string{"--batch-key", "k", "--batch-when", "true"}},
		{"--batch-key, --batch-when and --batch-fold go together: required flag --batch-key not set", []string{"--batch-when", "true", "--batch-fold", "."}},
		{"--unique-key and --batch-key cannot be used together", []string{"--unique-key", "u", "--batch-key", "k", "--batch-when", "true", "--batch-fold", "."}},
		{"--batch-key must not be empty", []string{"--batch-key", "", "--batch-when", "true", "--batch-fold", "."}},
		{"invalid --batch-when: variable not defined: $old", []string{"--batch-key", "k", "--batch-when", "$old", "--batch-fold", "."}},
		{"invalid --batch-fold: unexpected EOF", []string{"--batch-key", "k", "--batch-when", "true", "--batch-fold", "$existing |"}},
	} {
		c.fails(cmd.ExitUsage, tc.msg, append([]string{"job", "enqueue", "-q", "q", "-t", "t"}, tc.args...)...)
	}
}

// TestJobBulk: one job a line, with --queue and --type for the lines that
// name none; unique keys and batches per line; IDs in input order, the
// duplicate and the fold printing the job that stands for them.
func TestJobBulk(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	batch := fmt.Sprintf(`"batch":{"key":"b","when":%q,"fold":%q}`, foldWhen, foldProg)
	in := strings.Join([]string{
		`{"payload":{"n":1}}`,
		``,
		`{"payload":{"n":2},"unique_key":"u","unique_while":"active"}`,
		`{"payload":{"n":3},"unique_key":"u"}`,
		`{"payload":{"ids":[1]},` + batch + `}`,
		`{"payload":{"ids":[2]},` + batch + `}`,
		`{"queue":"other","type":"x","priority":5,"budgets":[{"key":"k","create_with":{"allocation":1,"strategy":{"type":"while_in_flight"}}}]}`,
	}, "\n") + "\n"
	r := c.runIn(in, "job", "bulk", "-q", "q", "-t", "t", "--chunk", "2")
	require.Equal(t, cmd.ExitOK, r.code, r.err)
	ids := lines(r.out)
	require.Len(t, ids, 6)
	require.Equal(t, ids[1], ids[2], "a duplicate of the unique job")
	require.Equal(t, ids[3], ids[4], "folded into the batch's pending job")
	var j api.Job
	c.json(&j, "job", "get", ids[1])
	require.Equal(t, "u", j.UniqueKey)
	require.Equal(t, "active", j.UniqueWhile)
	j = api.Job{}
	c.json(&j, "job", "get", ids[3])
	require.JSONEq(t, `{"ids":[1,2]}`, string(j.Payload))
	j = api.Job{}
	c.json(&j, "job", "get", ids[5])
	require.Equal(t, "other", j.Queue)
	require.Equal(t, uint16(5), j.Priority)
	require.JSONEq(t, `{}`, string(j.Payload))
	require.Equal(t, []api.Binding{{Key: "k", Cost: 1}}, j.Budgets)

	for _, tc := range []struct{ in, msg string }{
		{`{"queue":"q","type":"t"}` + "\n" + `{"queue":"q","typ":"t"}`, `line 2: not a job: json: unknown field "typ"`},
		{`{"type":"t"}`, `line 1: no "queue" (or give --queue)`},
		{`not json`, `line 1: not a job:`},
	} {
		requireFails(t, c.runIn(tc.in, "job", "bulk"), cmd.ExitUsage, tc.msg)
	}
	var n api.Count
	c.json(&n, "job", "count")
	require.Equal(t, int64(4), n.Count, "nothing sent from the refused inputs")
}
