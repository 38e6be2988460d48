-- Budget families, pausing a budget, fair share (SQLite's 0007).
--
-- A family is a budget with a template for its sub-budgets: per_key_* hold
-- the template (allocation, strategy, duration_ms and burst), all NULL for
-- a plain budget. Sub-budgets themselves are never stored: the engine makes
-- them from the template.
--
-- paused_until is unix ms, NULL when the pause has no end (or the budget
-- is not paused).
--
-- fair_tag is the fair-share tag (unix ms) the engine gives a job bound to
-- a family's sub-budget at enqueue, NULL for every other job; it never
-- changes. Rows written before this schema: no family, no pause, no tag.

ALTER TABLE budgets ADD COLUMN per_key_allocation bigint;
ALTER TABLE budgets ADD COLUMN per_key_strategy text;
ALTER TABLE budgets ADD COLUMN per_key_duration_ms bigint;
ALTER TABLE budgets ADD COLUMN per_key_burst bigint;
ALTER TABLE budgets ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE budgets ADD COLUMN paused_until bigint;

ALTER TABLE jobs ADD COLUMN fair_tag bigint;
