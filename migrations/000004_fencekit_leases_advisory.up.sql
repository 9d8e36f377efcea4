-- fencekit advisory leases (lease/pglease NewAdvisory): one row per lease
-- name, holding its token counter and the last holder's identity. The lease
-- itself is a session advisory lock; the row makes its tokens durable and
-- is kept after release, so the next grant takes max(token + 1, time in µs).
CREATE TABLE fencekit_leases_advisory (
    name     text   PRIMARY KEY,
    token    bigint NOT NULL CHECK (token > 0),
    identity text   NOT NULL DEFAULT ''
);
