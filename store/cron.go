package store

// CronGroup is a named collection of cron entries and its pause state.
// Zero values of PausedAt and ResumedAt mean "never"; an empty Timezone,
// "none" (the entries' own, or the server's local zone).
type CronGroup struct {
	Name      string
	Paused    bool
	PausedAt  int64
	ResumedAt int64
	Timezone  string
	// Entries are the group's entries, by name (CronGroups fills them;
	// PutCronGroup ignores them).
	Entries []CronEntry
}

// CronEntry is one recurring enqueue of a cron group. Job is the job
// template as the core encodes it: the store keeps it verbatim and never
// looks inside. Zero values of the timestamps mean "unset"; NextEnqueueAt
// is unset when the expression has no future occurrence.
type CronEntry struct {
	Group         string
	Name          string
	Expression    string
	Timezone      string
	Paused        bool
	PausedAt      int64
	ResumedAt     int64
	Job           []byte
	NextEnqueueAt int64
	LastEnqueueAt int64
}

// PutCronGroupOp inserts or replaces a group's own fields; see PutCronGroup.
type PutCronGroupOp struct{ Group CronGroup }

// DeleteCronGroupOp deletes a group and its entries; see DeleteCronGroup.
type DeleteCronGroupOp struct{ Name string }

// DeleteCronGroupsOp deletes every group and entry; see DeleteCronGroups.
type DeleteCronGroupsOp struct{}

// PutCronEntryOp inserts or replaces an entry; see PutCronEntry.
type PutCronEntryOp struct{ Entry CronEntry }

// DeleteCronEntryOp deletes one entry; see DeleteCronEntry.
type DeleteCronEntryOp struct{ Group, Name string }

// CronFiredOp records an entry's schedule after an occurrence; see
// CronFired.
type CronFiredOp struct {
	Group, Name   string
	NextEnqueueAt int64
	LastEnqueueAt int64
}

func (PutCronGroupOp) storeOp()     {}
func (DeleteCronGroupOp) storeOp()  {}
func (DeleteCronGroupsOp) storeOp() {}
func (PutCronEntryOp) storeOp()     {}
func (DeleteCronEntryOp) storeOp()  {}
func (CronFiredOp) storeOp()        {}

// PutCronGroup inserts or replaces the group named g.Name (its pause state
// and timezone); its entries are left as they are, and g.Entries is
// ignored.
func PutCronGroup(g CronGroup) Op {
	g.Entries = nil
	return PutCronGroupOp{Group: g}
}

// DeleteCronGroup deletes a group and every entry of it. It does nothing
// if there is no such group.
func DeleteCronGroup(name string) Op { return DeleteCronGroupOp{Name: name} }

// DeleteCronGroups deletes every cron group and entry (POST /reset does
// this first).
func DeleteCronGroups() Op { return DeleteCronGroupsOp{} }

// PutCronEntry inserts or replaces the entry e.Name of group e.Group,
// every field as given. The group is expected to exist (put it in the same
// group of ops); an entry of no group is not read back.
func PutCronEntry(e CronEntry) Op { return PutCronEntryOp{Entry: e} }

// DeleteCronEntry deletes one entry of a group. It does nothing if there
// is no such entry.
func DeleteCronEntry(group, name string) Op { return DeleteCronEntryOp{Group: group, Name: name} }

// CronFired writes an entry's next and last enqueue times (0 = unset)
// after an occurrence came, leaving its other fields alone. It goes in the
// group of ops that enqueues the occurrence's job, so that the job and the
// schedule commit together. It does nothing if there is no such entry.
func CronFired(group, name string, next, last int64) Op {
	return CronFiredOp{Group: group, Name: name, NextEnqueueAt: next, LastEnqueueAt: last}
}
