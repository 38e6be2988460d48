-- Jobs, their error history and budget configurations.
--
-- Tables are WITHOUT ROWID: job IDs are time-ordered strings and rows are
-- small, so one B-tree keyed by id serves both lookups and id-ordered
-- listings, and secondary indexes end in id (queue, id), (status, id).
-- Zero timestamps mean "unset", except purge_at, which is NULL when unset so
-- that its partial index holds only jobs awaiting purge.
--
-- jobs_status leaves out ready jobs, the bulk of a backlog: enqueueing a
-- ready job then costs no index write, and listing ready jobs in id order
-- walks the primary key, where they are dense. Queries that want the index
-- repeat "status <> 1" (SQLite uses a partial index only when the query
-- states its condition).

CREATE TABLE jobs (
    id                     TEXT    NOT NULL PRIMARY KEY,
    queue                  TEXT    NOT NULL,
    type                   TEXT    NOT NULL,
    priority               INTEGER NOT NULL,
    status                 INTEGER NOT NULL,
    payload                BLOB,
    ready_at               INTEGER NOT NULL,
    attempts               INTEGER NOT NULL,
    retry_limit            INTEGER,
    backoff_exponent       REAL,
    backoff_base_ms        INTEGER,
    backoff_jitter_ms      INTEGER,
    retention_completed_ms INTEGER,
    retention_dead_ms      INTEGER,
    dequeued_at            INTEGER NOT NULL DEFAULT 0,
    failed_at              INTEGER NOT NULL DEFAULT 0,
    completed_at           INTEGER NOT NULL DEFAULT 0,
    purge_at               INTEGER,
    budgets                TEXT -- JSON [{"key":…,"cost":…}], NULL when none
) STRICT, WITHOUT ROWID;

CREATE INDEX jobs_queue ON jobs (queue);
CREATE INDEX jobs_status ON jobs (status) WHERE status <> 1;
CREATE INDEX jobs_purge_at ON jobs (purge_at) WHERE purge_at IS NOT NULL;

CREATE TABLE job_errors (
    job_id      TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    message     TEXT    NOT NULL,
    error_type  TEXT    NOT NULL DEFAULT '',
    backtrace   TEXT    NOT NULL DEFAULT '',
    dequeued_at INTEGER NOT NULL,
    failed_at   INTEGER NOT NULL,
    PRIMARY KEY (job_id, attempt)
) STRICT, WITHOUT ROWID;

CREATE TABLE budgets (
    key         TEXT    NOT NULL PRIMARY KEY,
    allocation  INTEGER NOT NULL,
    strategy    TEXT    NOT NULL,
    duration_ms INTEGER NOT NULL DEFAULT 0,
    burst       INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
