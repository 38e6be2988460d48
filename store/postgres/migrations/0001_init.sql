-- Jobs, their error history, budget configurations and small facts about
-- the store, as SQLite's 0001-0003 left them.
--
-- Names the API takes as they come (queue, type, unique keys, error text,
-- budget keys) are bytea: PostgreSQL's text holds no NUL byte and only valid
-- UTF-8, and bytea compares byte by byte, the order every listing uses. IDs
-- are ASCII, text COLLATE "C" for the same order.
--
-- The payload stays in the job's row: a row is written at enqueue and
-- deleted at ack, and one row costs less than two. Large payloads go to
-- TOAST, out of the way of Load's scan.
--
-- Only the primary key is indexed on every job: an update that changes no
-- indexed column is a HOT update (no index write), so dispatch and retry
-- touch the heap page alone. Listings by queue or status walk the primary
-- key; Load sorts what it reads.

CREATE TABLE jobs (
    id                     text COLLATE "C" NOT NULL PRIMARY KEY,
    queue                  bytea    NOT NULL,
    type                   bytea    NOT NULL,
    priority               integer  NOT NULL,
    status                 smallint NOT NULL,
    payload                bytea,
    ready_at               bigint   NOT NULL,
    attempts               bigint   NOT NULL,
    retry_limit            bigint,
    backoff_exponent       double precision,
    backoff_base_ms        bigint,
    backoff_jitter_ms      bigint,
    retention_completed_ms bigint,
    retention_dead_ms      bigint,
    dequeued_at            bigint   NOT NULL DEFAULT 0,
    failed_at              bigint   NOT NULL DEFAULT 0,
    completed_at           bigint   NOT NULL DEFAULT 0,
    purge_at               bigint,
    budgets                text -- JSON [{"key":…,"cost":…}], NULL when none
) WITH (fillfactor = 90);

CREATE INDEX jobs_purge_at ON jobs (purge_at, id) WHERE purge_at IS NOT NULL;

CREATE TABLE job_errors (
    job_id      text COLLATE "C" NOT NULL,
    attempt     bigint NOT NULL,
    message     bytea  NOT NULL,
    error_type  bytea  NOT NULL,
    backtrace   bytea  NOT NULL,
    dequeued_at bigint NOT NULL,
    failed_at   bigint NOT NULL,
    PRIMARY KEY (job_id, attempt)
);

CREATE TABLE budgets (
    key         bytea  NOT NULL PRIMARY KEY,
    allocation  bigint NOT NULL,
    strategy    text   NOT NULL,
    duration_ms bigint NOT NULL DEFAULT 0,
    burst       bigint NOT NULL DEFAULT 0,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL
);

-- id_high_water: the greatest job ID ever inserted, raised in the
-- transaction of every insert, so IDs keep increasing across restarts and
-- leaders even when every job is gone.
CREATE TABLE meta (
    key   text COLLATE "C" NOT NULL PRIMARY KEY,
    value text COLLATE "C" NOT NULL
);
