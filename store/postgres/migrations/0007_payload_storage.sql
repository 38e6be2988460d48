-- Payloads are stored as they come, not compressed: a payload too large
-- for the row goes to TOAST whole, as SQLite keeps it. Compression would
-- cost the database CPU on every enqueue and every read of a payload, and
-- keep a compressible large payload in the row itself, where every status
-- change (a new row version) copies it and Load's scan reads past it; out
-- of line, the row holds an 18-byte pointer that status changes carry
-- unchanged. The space a backlog takes is then the payloads' own, which
-- Sizes, /metrics and compaction report as for SQLite.
--
-- This changes how new values are stored; values written before stay as
-- they are.

ALTER TABLE jobs ALTER COLUMN payload SET STORAGE EXTERNAL;
