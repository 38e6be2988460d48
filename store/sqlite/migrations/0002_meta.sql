-- Small facts about the store itself, one row each.
--
-- id_high_water: the greatest job ID ever inserted (saved by the writer
-- about once a second and at close). Job IDs start with a timestamp; at
-- start the ID generator is moved past this mark, so IDs keep increasing
-- across restarts even when every job is gone and the clock stepped back.
--
-- Databases made by this schema on also use auto_vacuum=INCREMENTAL; that
-- is a file setting, not schema, so it is set at open (checkpoint.go).

CREATE TABLE meta (
    key   TEXT NOT NULL PRIMARY KEY,
    value TEXT NOT NULL
) STRICT, WITHOUT ROWID;
