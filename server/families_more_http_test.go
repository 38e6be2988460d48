package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// famMoreFamily is a family of while_in_flight sub-budgets of one token.
const famMoreFamily = `{"allocation":10,"strategy":{"type":"while_in_flight"},"per_key":{"allocation":1,"strategy":{"type":"while_in_flight"}}}`

// TestFamilies_KeyNotUTF8: every budget key of a path or a query string
// that is not UTF-8 after percent-decoding is refused with 400, a
// sub-budget's key of a family included (it was answered as an idle
// sub-budget whose key came back as U+FFFD), and nothing changes.
func TestFamilies_KeyNotUTF8(t *testing.T) {
	t.Parallel()
	famEachFormat(t, func(t *testing.T, b *famBundle) {
		b.call(t, "PUT", "/budgets/fam", famMoreFamily, http.StatusOK, nil)
		job := b.famJob(t, "nobody", `[{"key":"fam/a"}]`)
		const pathMsg = "invalid path: budget key must be valid UTF-8"
		binding := `{"cost":1}`
		for _, key := range []string{"fam%2F%FF", "%FF", "a%C3"} {
			for _, c := range []struct{ method, path, body, msg string }{
				{"GET", "/budgets/" + key, "", pathMsg},
				{"GET", "/budgets/" + key + "?state=true", "", pathMsg},
				{"PUT", "/budgets/" + key, famPlain, pathMsg},
				{"POST", "/budgets/" + key, famPlain, pathMsg},
				{"PATCH", "/budgets/" + key, `{"paused":true}`, pathMsg},
				{"DELETE", "/budgets/" + key, "", pathMsg},
				{"GET", "/budgets/" + key + "/forecast", "", pathMsg},
				{"POST", "/jobs/" + job.ID + "/budgets/" + key, "", pathMsg},
				{"PUT", "/jobs/" + job.ID + "/budgets/" + key, "", pathMsg},
				{"PATCH", "/jobs/" + job.ID + "/budgets/" + key, binding, pathMsg},
				{"DELETE", "/jobs/" + job.ID + "/budgets/" + key, "", pathMsg},
				{"POST", "/jobs/budgets/" + key, "", pathMsg},
				{"DELETE", "/jobs/budgets/" + key + "?queue=nobody", "", pathMsg},
				{"GET", "/budgets?parent=" + key, "", "invalid query parameters: parent must be valid UTF-8"},
				{"GET", "/jobs?budgets.key=" + key, "", "invalid query parameters: budgets.key must be valid UTF-8"},
				{"GET", "/jobs/count?budgets.key=ok," + key, "", "invalid query parameters: budgets.key must be valid UTF-8"},
				{"DELETE", "/jobs?budgets.key=" + key, "", "invalid query parameters: budgets.key must be valid UTF-8"},
			} {
				before := b.snapshot(t, "/jobs/"+job.ID)
				b.fails(t, c.method, c.path, c.body, http.StatusBadRequest, c.msg)
				require.Equal(t, before, b.snapshot(t, "/jobs/"+job.ID), "%s %s changed something", c.method, c.path)
			}
		}
	})
}
