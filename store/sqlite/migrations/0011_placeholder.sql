-- PLACEHOLDER, not to be merged: version 11 belongs to another branch of
-- issue 26. The migration runner (store/internal/migration) wants versions
-- without gaps, so this branch's 0012 needs a 0011 to run at all. Drop
-- this file when merging; a merge that keeps it beside the real 0011 is
-- refused at start ("expected version 12"), never applied silently.
SELECT 1;
