-- Budget families, pausing a budget, fair share (issue 16).
--
-- A family is a budget with a template for its sub-budgets: per_key_* hold
-- the template (allocation, strategy, duration_ms and burst, 0 when unset,
-- as the budget's own columns), all NULL for a plain budget. Sub-budgets
-- themselves are never stored: the engine makes them from the template.
--
-- paused is 0 or 1; paused_until is unix ms, NULL when the pause has no end
-- (or the budget is not paused).
--
-- fair_tag is the fair-share tag (unix ms) the engine gives a job bound to
-- a family's sub-budget at enqueue, NULL for every other job; it never
-- changes. Rows written before this schema are NULL: no family, no pause,
-- no tag.

ALTER TABLE budgets ADD COLUMN per_key_allocation INTEGER;
ALTER TABLE budgets ADD COLUMN per_key_strategy TEXT;
ALTER TABLE budgets ADD COLUMN per_key_duration_ms INTEGER;
ALTER TABLE budgets ADD COLUMN per_key_burst INTEGER;
ALTER TABLE budgets ADD COLUMN paused INTEGER NOT NULL DEFAULT 0;
ALTER TABLE budgets ADD COLUMN paused_until INTEGER;

ALTER TABLE jobs ADD COLUMN fair_tag INTEGER;
