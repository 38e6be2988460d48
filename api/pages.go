package api

import (
	"fmt"
	"net/url"
	"strings"
)

// Page links of the paginated listings (docs/API.md §Listing jobs), both
// directions: the server builds them with Pages, a client follows one by
// parsing it back into the query it stands for (ParseJobsLink,
// ParseErrorsLink).

// Pages returns the links of a page of the listing q that holds jobs:
// itself; the next page, after its last job, when more follow; the previous
// page, before its first job in the reverse order, when the page has a
// cursor. An empty page links to itself only.
func (q JobQuery) Pages(jobs []Job, more bool) Pages {
	p := Pages{Self: q.Link(q.From, q.Order)}
	if len(jobs) == 0 {
		return p
	}
	if more {
		next := q.Link(jobs[len(jobs)-1].ID, q.Order)
		p.Next = &next
	}
	if q.From != "" {
		prev := q.Link(jobs[0].ID, reverseOrder(q.Order))
		p.Prev = &prev
	}
	return p
}

// Pages returns the links of a page of a job's error records, as
// JobQuery.Pages does: the cursors are attempt numbers.
func (q ErrorsQuery) Pages(jobID string, recs []ErrorRecord, more bool) Pages {
	p := Pages{Self: q.Link(jobID)}
	if len(recs) == 0 {
		return p
	}
	if more {
		next := ErrorsQuery{From: recs[len(recs)-1].Attempt, HasFrom: true, Order: q.Order, Limit: q.Limit}.Link(jobID)
		p.Next = &next
	}
	if q.HasFrom {
		prev := ErrorsQuery{From: recs[0].Attempt, HasFrom: true, Order: reverseOrder(q.Order), Limit: q.Limit}.Link(jobID)
		p.Prev = &prev
	}
	return p
}

// reverseOrder is the order of a previous page: the other one.
func reverseOrder(order string) string {
	if order == OrderDesc {
		return OrderAsc
	}
	return OrderDesc
}

// ParseJobsLink reads a page link of GET /jobs (a Pages member) back into
// the query it stands for, so that following a link is asking for that
// query.
func ParseJobsLink(link string) (JobQuery, error) {
	path, v, err := splitLink(link)
	if err != nil {
		return JobQuery{}, err
	}
	if path != "/jobs" {
		return JobQuery{}, fmt.Errorf("page link %q: not a link of GET /jobs", link)
	}
	q, err := ParseJobQuery(v, true)
	if err != nil {
		return JobQuery{}, fmt.Errorf("page link %q: %w", link, err)
	}
	return q, nil
}

// ParseErrorsLink reads a page link of GET /jobs/{id}/errors back into the
// job's ID and the query it stands for.
func ParseErrorsLink(link string) (jobID string, q ErrorsQuery, err error) {
	path, v, err := splitLink(link)
	if err != nil {
		return "", ErrorsQuery{}, err
	}
	rest, ok := strings.CutPrefix(path, "/jobs/")
	if ok {
		rest, ok = strings.CutSuffix(rest, "/errors")
	}
	if ok && rest != "" && !strings.Contains(rest, "/") {
		jobID, err = url.PathUnescape(rest)
	}
	if !ok || jobID == "" || err != nil {
		return "", ErrorsQuery{}, fmt.Errorf("page link %q: not a link of GET /jobs/{id}/errors", link)
	}
	if q, err = ParseErrorsQuery(v); err != nil {
		return "", ErrorsQuery{}, fmt.Errorf("page link %q: %w", link, err)
	}
	return jobID, q, nil
}

// splitLink splits a relative link into its escaped path and its query.
func splitLink(link string) (string, url.Values, error) {
	u, err := url.Parse(link)
	if err == nil && (u.Scheme != "" || u.Host != "" || u.Fragment != "") {
		err = fmt.Errorf("not a relative link")
	}
	if err != nil {
		return "", nil, fmt.Errorf("page link %q: %w", link, err)
	}
	v, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", nil, fmt.Errorf("page link %q: %w", link, err)
	}
	return u.EscapedPath(), v, nil
}
