-- Reserved for the unique jobs of issue 13 (built on another branch): this
-- placeholder keeps the version numbers without gaps until that branch's
-- 0004 is merged, which replaces it.
SELECT 1;
