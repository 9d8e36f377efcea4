-- fencekit leases (lease/pglease): one row per lease name. A row is kept
-- after its lease is released or expires, so that its token counter never
-- goes back: the next grant takes max(token + 1, time in µs). Expiry is read
-- from the server's clock only (statement_timestamp()), never a client's.
CREATE TABLE fencekit_leases (
    name       text        PRIMARY KEY,
    token      bigint      NOT NULL CHECK (token > 0),
    expires_at timestamptz NOT NULL
);
