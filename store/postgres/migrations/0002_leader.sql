-- The cluster's lease: one row, the leader's. holder is the process that
-- holds it, url where the others forward to, term increases with every
-- change of holder, and expires_at is the database's clock (now()), never a
-- server's. A candidate takes the row only once expires_at has passed.
--
-- zizq_fence is the first statement of every write transaction of a
-- leader: it takes a share lock on the row while the holder and term are
-- still the caller's and the lease runs, and fails otherwise. A takeover
-- updates the row, so it waits for the share locks of the transactions
-- under way and their writes all come before it; a deposed leader's later
-- transactions fail here and write nothing.

CREATE TABLE leader (
    id         integer PRIMARY KEY CHECK (id = 1),
    holder     text        NOT NULL,
    url        text        NOT NULL,
    term       bigint      NOT NULL,
    expires_at timestamptz NOT NULL
);

CREATE FUNCTION zizq_fence(p_holder text, p_term bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM leader
        WHERE id = 1 AND holder = p_holder AND term = p_term AND expires_at > now()
        FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'not the leader: the lease of term % is lost', p_term
            USING ERRCODE = 'ZQ001';
    END IF;
END
$$;
