// Package sqlite is zizq's store on an embedded SQLite database
// (modernc.org/sqlite, no cgo): one file, <data dir>/zizq.db, in WAL mode.
//
// Writes go through Append to one writer goroutine that owns the only
// writing connection and commits many appended groups in one transaction
// (group commit); reads use a separate pool of query-only connections and
// run beside the writer. The writer also takes care of the file: WAL
// checkpoints, returning free pages, the job-ID high-water mark
// (checkpoint.go).
//
// Options.CacheSizeBytes (--cache-size) bounds SQLite's page cache of all
// the connections together: each (the writer, the read pool's, a backup's)
// is given an equal share, and SQLite lets the caches of a process take
// each other's unused pages up to the sum of their sizes. The default, DefaultCacheSize
// (8 MiB), is far below Zizq's 256 MB: payloads live only here, in a table
// of their own, and the server is meant to hold a million queued jobs in
// 128 bytes of RSS each.
//
// An acknowledged job costs one statement, DELETE FROM jobs: triggers of
// the schema delete its payload row and, for the few jobs that have any,
// its error records (migration 0009). For a ready job of the default
// priority (an acknowledged job is still ready on disk unless its dispatch
// mark was written, see lazy.go) that delete touches two B-trees, the row
// and the payload row: jobs_live, which orders the live jobs for Load,
// leaves that priority out (migration 0014), and jobs_queue leaves out
// ready jobs (0015), whose queues the server learns from its engine. A
// dispatch reads its jobs' payloads and failed_at from job_payloads alone.
//
// Beyond the store interface it offers what only a local SQLite file has:
// SimulateFault, IntegrityCheck, JournalMode, the Maintenance knobs, and
// Restore and CheckArchive of backup archives.
package sqlite
