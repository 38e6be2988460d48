-- Reserved for the batched jobs of issue 13 (built on another branch): this
-- placeholder keeps the version numbers without gaps until that branch's
-- 0005 is merged, which replaces it.
SELECT 1;
