-- Reserved for the unique jobs of issue 13, built in another branch: this
-- branch's batched jobs take 0005, as assigned. Migrations must run without
-- gaps, so this placeholder changes nothing; the merge replaces it with the
-- unique jobs' own 0004.
SELECT 1;
