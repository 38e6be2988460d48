package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func link(s string) *string { return &s }

func TestJobQuery_Pages(t *testing.T) {
	t.Parallel()
	page := []Job{{ID: id1}, {ID: id2}}
	tests := []struct {
		name string
		q    JobQuery
		jobs []Job
		more bool
		want Pages
	}{
		{
			name: "FirstOfMore", q: JobQuery{Queues: []string{"p"}, Order: "asc", Limit: 2}, jobs: page, more: true,
			want: Pages{Self: "/jobs?order=asc&limit=2&queue=p", Next: link("/jobs?from=" + id2 + "&order=asc&limit=2&queue=p")},
		},
		{
			name: "Middle", q: JobQuery{Order: "asc", Limit: 2, From: "x"}, jobs: page, more: true,
			want: Pages{
				Self: "/jobs?from=x&order=asc&limit=2",
				Next: link("/jobs?from=" + id2 + "&order=asc&limit=2"),
				Prev: link("/jobs?from=" + id1 + "&order=desc&limit=2"),
			},
		},
		{
			name: "LastDescending", q: JobQuery{Parked: true, Order: "desc", Limit: 2, From: "x"}, jobs: page,
			want: Pages{Self: "/jobs?from=x&order=desc&limit=2&parked=true", Prev: link("/jobs?from=" + id1 + "&order=asc&limit=2&parked=true")},
		},
		{
			name: "Empty", q: JobQuery{Order: "asc", Limit: 2, From: "x"}, more: true,
			want: Pages{Self: "/jobs?from=x&order=asc&limit=2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.q.Pages(tt.jobs, tt.more))
		})
	}
}

func TestErrorsQuery_Pages(t *testing.T) {
	t.Parallel()
	recs := []ErrorRecord{{Attempt: 2}, {Attempt: 3}}
	p := ErrorsQuery{Order: "asc", Limit: 2}.Pages(id1, recs, true)
	require.Equal(t, Pages{
		Self: "/jobs/" + id1 + "/errors?order=asc&limit=2",
		Next: link("/jobs/" + id1 + "/errors?from=3&order=asc&limit=2"),
	}, p)
	p = ErrorsQuery{HasFrom: true, Order: "desc", Limit: 2}.Pages(id1, recs, false)
	require.Equal(t, Pages{
		Self: "/jobs/" + id1 + "/errors?from=0&order=desc&limit=2",
		Prev: link("/jobs/" + id1 + "/errors?from=2&order=asc&limit=2"),
	}, p)
	p = ErrorsQuery{From: 9, HasFrom: true, Order: "asc", Limit: 2}.Pages(id1, nil, true)
	require.Equal(t, Pages{Self: "/jobs/" + id1 + "/errors?from=9&order=asc&limit=2"}, p)
}

func TestParseJobsLink(t *testing.T) {
	t.Parallel()
	q := JobQuery{
		Queues: []string{"a&b", "c d"}, Statuses: []string{"ready"}, Priority: rng(u64(1), nil),
		Filter: `.x == "é"`, Parked: true, Order: "desc", Limit: 3, From: id1,
	}
	got, err := ParseJobsLink(q.Link(q.From, q.Order))
	require.NoError(t, err)
	require.Equal(t, q, got)

	for _, bad := range []string{
		"/jobs/take?queue=a",
		"http://elsewhere/jobs?limit=1",
		"//elsewhere/jobs",
		"/jobs?limit=1#x",
		"/jobs?limit=0",
		"/jobs?%zz",
		"/jobs?bogus=1",
	} {
		_, err := ParseJobsLink(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "page link ", bad)
	}
}

func TestParseErrorsLink(t *testing.T) {
	t.Parallel()
	for _, id := range []string{id1, "a/b c"} {
		q := ErrorsQuery{From: 4, HasFrom: true, Order: "desc", Limit: 9}
		gotID, got, err := ParseErrorsLink(q.Link(id))
		require.NoError(t, err)
		require.Equal(t, id, gotID)
		require.Equal(t, q, got)
	}
	for _, bad := range []string{
		"/jobs?limit=1",
		"/jobs//errors",
		"/jobs/a/b/errors",
		"/jobs/a/errors/1",
		"/jobs/%zz/errors",
		"/jobs/a/errors?from=x",
	} {
		_, _, err := ParseErrorsLink(bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "page link ", bad)
	}
}
