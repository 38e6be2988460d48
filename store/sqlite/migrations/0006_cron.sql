-- Cron groups and their entries (issue 13).
--
-- A group is a name, its pause state and an optional timezone that its
-- entries without one of their own are evaluated in. An entry is a cron
-- expression, its own pause state, the job template the core encodes (job:
-- opaque to the store) and its schedule: next_enqueue_at (NULL when the
-- expression has no future occurrence) and last_enqueue_at. A fire writes
-- only the schedule, in the transaction that inserts the fired job.
--
-- Timestamps are milliseconds since the epoch, NULL when unset; paused is
-- 0 or 1.

CREATE TABLE cron_groups (
    name       TEXT    NOT NULL PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    paused_at  INTEGER,
    resumed_at INTEGER,
    timezone   TEXT
) STRICT, WITHOUT ROWID;

CREATE TABLE cron_entries (
    group_name      TEXT    NOT NULL,
    name            TEXT    NOT NULL,
    expression      TEXT    NOT NULL,
    timezone        TEXT,
    paused          INTEGER NOT NULL DEFAULT 0,
    paused_at       INTEGER,
    resumed_at      INTEGER,
    job             BLOB    NOT NULL,
    next_enqueue_at INTEGER,
    last_enqueue_at INTEGER,
    PRIMARY KEY (group_name, name)
) STRICT, WITHOUT ROWID;
