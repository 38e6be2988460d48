package cmd_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zizq/zizq/api"
	"github.com/zizq/zizq/cmd"
)

// TestBudgetCommands_KeyOverrides: --key-weight and --key-allocation on
// create, put and patch; SUB=, --remove-key and --no-keys on patch; the
// overrides under `budget get`, the KEYS and WEIGHT columns; refusals
// before any request.
func TestBudgetCommands_KeyOverrides(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	family := []string{"--allocation", "10", "--strategy", "while_in_flight", "--per-key-allocation", "2", "--per-key-strategy", "while_in_flight"}

	var b api.Budget
	c.json(&b, append([]string{"budget", "create", "tenants", "--key-weight", "acme=3", "--key-allocation", "acme=5", "--key-weight", "globex=2"}, family...)...)
	require.Equal(t, api.KeyOverrides{"acme": {Weight: 3, Allocation: 5}, "globex": {Weight: 2}}, b.Keys)

	out := c.ok("budget", "get", "tenants")
	require.Equal(t, [][]string{{"SUB-KEY", "WEIGHT", "ALLOCATION"}, {"acme", "3", "5"}, {"globex", "2", "-"}}, cells(out)[3:])
	require.Contains(t, cells(out)[0], "KEYS")
	require.Equal(t, "2", cells(out)[1][len(cells(out)[1])-1], "KEYS counts the overridden sub-keys")

	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "tenants/acme")
	c.ok("job", "enqueue", "-q", "q", "-t", "t", "--budget", "tenants/zeta")
	require.Equal(t, [][]string{
		{"KEY", "STRATEGY", "ALLOCATION", "RATE", "BURST", "AVAILABLE", "IN", "FLIGHT", "PARKED", "NEXT", "TOKEN", "WEIGHT"},
		{"tenants/acme", "while_in_flight", "5", "-", "-", "5", "0", "0", "-", "3"},
		{"tenants/zeta", "while_in_flight", "2", "-", "-", "2", "0", "0", "-", "1"},
	}, cells(c.ok("budget", "list", "--parent", "tenants")))

	b = api.Budget{}
	c.json(&b, "budget", "patch", "tenants", "--key-weight", "acme=", "--key-allocation", "globex=7", "--key-weight", "hooli=1000")
	require.Equal(t, api.KeyOverrides{"acme": {Allocation: 5}, "globex": {Weight: 2, Allocation: 7}, "hooli": {Weight: 1000}}, b.Keys)
	b = api.Budget{}
	c.json(&b, "budget", "patch", "tenants", "--remove-key", "globex", "--remove-key", "absent")
	require.Equal(t, api.KeyOverrides{"acme": {Allocation: 5}, "hooli": {Weight: 1000}}, b.Keys)
	b = api.Budget{}
	c.json(&b, "budget", "patch", "tenants", "--no-keys")
	require.Nil(t, b.Keys)

	b = api.Budget{}
	c.json(&b, append([]string{"budget", "put", "tenants", "--key-weight", "x=4"}, family...)...)
	require.Equal(t, api.KeyOverrides{"x": {Weight: 4}}, b.Keys)
	b = api.Budget{}
	c.json(&b, append([]string{"budget", "put", "tenants"}, family...)...)
	require.Nil(t, b.Keys, "put replaces the overrides")

	plain := []string{"budget", "put", "plain", "--allocation", "1", "--strategy", "while_in_flight"}
	for _, tc := range []struct {
		msg  string
		args []string
	}{
		{"--key-weight and --key-allocation are a family's: give the --per-key-… flags too", append(plain, "--key-weight", "a=2")},
		{`--key-weight "a=0": N must be an integer from 1 to 1000`, append([]string{"budget", "put", "tenants", "--key-weight", "a=0"}, family...)},
		{`--key-weight "a=1001": N must be an integer from 1 to 1000`, []string{"budget", "patch", "tenants", "--key-weight", "a=1001"}},
		{`--key-allocation "a=x": N must be an integer from 1 to 2147483647`, []string{"budget", "patch", "tenants", "--key-allocation", "a=x"}},
		{`--key-weight "a=": N must be an integer from 1 to 1000`, append([]string{"budget", "create", "t2", "--key-weight", "a="}, family...)},
		{`--key-weight "a": want SUB=N`, []string{"budget", "patch", "tenants", "--key-weight", "a"}},
		{"--key-weight: SUB must not be empty", []string{"budget", "patch", "tenants", "--key-weight", "=2"}},
		{`--key-weight: sub-key "a/b" must not contain '/'`, []string{"budget", "patch", "tenants", "--key-weight", "a/b=2"}},
		{`--key-allocation: sub-key "a" is given twice`, []string{"budget", "patch", "tenants", "--key-allocation", "a=2", "--key-allocation", "a=3"}},
		{"--no-keys cannot come with other --key-… flags or --remove-key", []string{"budget", "patch", "tenants", "--no-keys", "--remove-key", "a"}},
		{"--remove-key a cannot come with a --key-… flag of a", []string{"budget", "patch", "tenants", "--remove-key", "a", "--key-weight", "a=2"}},
	} {
		c.fails(cmd.ExitUsage, tc.msg, tc.args...)
	}
	c.ok("budget", "put", "plain2", "--allocation", "1", "--strategy", "while_in_flight")
	c.fails(cmd.ExitFailure, "keys is only valid for a family", "budget", "patch", "plain2", "--key-weight", "a=2")
}
