-- Adaptive budgets (issue 26): how a budget backs off when a worker
-- reports that the upstream refused. adaptive holds a JSON object
-- {"decrease", "recover_ms", "floor"} (store.EncodeAdaptive); NULL for a
-- budget that does not back off, and for every row older than this. What a
-- budget has backed off to is not stored: a restart starts it at its
-- configured rate again.

ALTER TABLE budgets ADD COLUMN adaptive TEXT;
