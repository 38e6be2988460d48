package api

// CronGroup is a cron group as rendered by GET, PUT and PATCH /crons/{g}:
// its entries sorted by name. Timezone (our extension, sent by the newest
// official clients) applies to the entries without one of their own; it
// is omitted when unset.
type CronGroup struct {
	Name      string      `json:"name"`
	Paused    bool        `json:"paused"`
	PausedAt  uint64      `json:"paused_at,omitempty"`
	ResumedAt uint64      `json:"resumed_at,omitempty"`
	Timezone  string      `json:"timezone,omitempty"`
	Entries   []CronEntry `json:"entries"`
}

// CronEntry is one entry of a cron group. Job echoes its template: an
// enqueue request with priority and binding costs materialised and
// create_with kept, without ready_at. NextEnqueueAt is omitted when the
// expression has no future occurrence.
type CronEntry struct {
	Name          string         `json:"name"`
	Expression    string         `json:"expression"`
	Timezone      string         `json:"timezone,omitempty"`
	Paused        bool           `json:"paused"`
	PausedAt      uint64         `json:"paused_at,omitempty"`
	ResumedAt     uint64         `json:"resumed_at,omitempty"`
	Job           EnqueueRequest `json:"job"`
	NextEnqueueAt uint64         `json:"next_enqueue_at,omitempty"`
	LastEnqueueAt uint64         `json:"last_enqueue_at,omitempty"`
}

// CronList is the body of GET /crons: the group names, sorted.
type CronList struct {
	Crons []string `json:"crons"`
}

// CronEntryRequest is an entry as sent: each item of PUT /crons/{g}, and
// the body of POST /crons/{g}/entries and PUT /crons/{g}/entries/{e}.
// Name, Expression and Job are required; Paused nil keeps an existing
// entry's state (false for a new one); Timezone nil means the group's, or
// the server's local zone.
type CronEntryRequest struct {
	Name       *string         `json:"name,omitempty"`
	Expression *string         `json:"expression,omitempty"`
	Timezone   *string         `json:"timezone,omitempty"`
	Paused     *bool           `json:"paused,omitempty"`
	Job        *EnqueueRequest `json:"job,omitempty"`
}

// CronGroupRequest is the body of PUT /crons/{g}. Entries is required (nil
// is missing; an empty list keeps an empty group). Paused nil keeps an
// existing group's state; Timezone is replaced (nil clears it).
type CronGroupRequest struct {
	Paused   *bool              `json:"paused,omitempty"`
	Timezone *string            `json:"timezone,omitempty"`
	Entries  []CronEntryRequest `json:"entries"`
}

// CronPause is the body of PATCH /crons/{g} and PATCH
// /crons/{g}/entries/{e}; Paused is required.
type CronPause struct {
	Paused *bool `json:"paused,omitempty"`
}

// CronStats is one cron group at a glance, in GET /stats (our extension):
// NextEnqueueAt is the earliest occurrence that will enqueue a job, of
// entry NextEntry (both omitted when none will: every entry or the group
// paused, or no future occurrence); LastEnqueueAt the latest that did.
type CronStats struct {
	Name          string `json:"name"`
	Paused        bool   `json:"paused"`
	Entries       int    `json:"entries"`
	PausedEntries int    `json:"paused_entries"`
	NextEnqueueAt uint64 `json:"next_enqueue_at,omitempty"`
	NextEntry     string `json:"next_entry,omitempty"`
	LastEnqueueAt uint64 `json:"last_enqueue_at,omitempty"`
}
