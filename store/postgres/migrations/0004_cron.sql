-- Cron groups and their entries (SQLite's 0006). Names are text COLLATE "C"
-- (the API refuses NUL in them): listings come in byte order. Timestamps
-- are milliseconds since the epoch, NULL when unset.

CREATE TABLE cron_groups (
    name       text COLLATE "C" NOT NULL PRIMARY KEY,
    paused     boolean NOT NULL DEFAULT false,
    paused_at  bigint,
    resumed_at bigint,
    timezone   text
);

CREATE TABLE cron_entries (
    group_name      text COLLATE "C" NOT NULL,
    name            text COLLATE "C" NOT NULL,
    expression      text    NOT NULL,
    timezone        text,
    paused          boolean NOT NULL DEFAULT false,
    paused_at       bigint,
    resumed_at      bigint,
    job             bytea   NOT NULL,
    next_enqueue_at bigint,
    last_enqueue_at bigint,
    PRIMARY KEY (group_name, name)
);
