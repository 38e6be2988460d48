-- Per-sub-key weights and allocations of a family (issue 26).
--
-- key_overrides is a JSON object from sub-key (what follows "<family>/")
-- to {"weight":<1..1000>} and/or {"allocation":<tokens>}: the sub-key's
-- share of the family's fair turns and its sub-budget's allocation in
-- place of the template's. NULL when the family has none (and for plain
-- budgets, and every row older than this).

ALTER TABLE budgets ADD COLUMN key_overrides TEXT;
