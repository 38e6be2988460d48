-- The pauses of a family's sub-budgets (SQLite's 0008).
--
-- Sub-budgets are never stored, but a pause set on one must outlast a
-- restart and a change of the family's template, so it is stored with its
-- family: sub_pauses is a JSON object from sub-budget key to
-- {"paused":true} and/or {"paused_until":<unix ms>}, NULL when no
-- sub-budget of the family is paused (and for plain budgets).

ALTER TABLE budgets ADD COLUMN sub_pauses text;
