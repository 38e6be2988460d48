-- Per-sub-key weights and allocations of a family (issue 26; SQLite's 0012).
--
-- key_overrides is a JSON object from sub-key (what follows "<family>/")
-- to {"weight":<1..1000>} and/or {"allocation":<tokens>}: the sub-key's
-- share of the family's fair turns and its sub-budget's allocation in
-- place of the template's. NULL when the family has none (and for plain
-- budgets, and every row older than this). Text, not jsonb: the store
-- only writes and reads it whole.

ALTER TABLE budgets ADD COLUMN key_overrides text;
