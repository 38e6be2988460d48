package tui

import (
	"cmp"
	"slices"

	"github.com/zizq/zizq/api"
)

// sortKey orders the rows of the job tabs.
type sortKey int

const (
	// sortList is the list's own order: ready jobs in dispatch order, in
	// flight by when they were dequeued, scheduled by time to ready.
	sortList sortKey = iota
	sortQueue
	sortType
	sortPriority
	sortAttempts
	numSorts
)

var sortNames = [numSorts]string{"list order", "queue", "type", "priority", "attempts"}

// sortJobs returns the jobs of a tab in the order the sort key says, ties
// in the list's order. In the list's order, jobs stay as they came (the
// stream's windows and the API's ready and in-flight pages are in it),
// but for the scheduled jobs the API lists by id: those go by time to
// ready.
func sortJobs(jobs []api.Job, status string, by sortKey) []api.Job {
	if by == sortList && status != api.StatusScheduled {
		return jobs
	}
	out := slices.Clone(jobs)
	order := listOrder(status)
	slices.SortStableFunc(out, func(a, b api.Job) int {
		var c int
		switch by {
		case sortQueue:
			c = naturalCompare(a.Queue, b.Queue)
		case sortType:
			c = naturalCompare(a.Type, b.Type)
		case sortPriority:
			c = cmp.Compare(a.Priority, b.Priority)
		case sortAttempts:
			c = cmp.Compare(b.Attempts, a.Attempts) // most first
		}
		return cmp.Or(c, order(a, b))
	})
	return out
}
