-- Where the leader's admin port is reached (its --admin-host and
-- --admin-port), so that a follower's admin port can name it: backups,
-- compaction and the event stream are the leader's. Empty when the
-- leader has no admin port.

ALTER TABLE leader ADD COLUMN admin_url text NOT NULL DEFAULT '';
