-- fencekit guard rows: one row per fenced resource, holding the newest
-- fencing token accepted for it. sqlfence.InTx claims the row inside the
-- caller's transaction; the row lock serializes writers until commit.
CREATE TABLE fencekit_tokens (
    resource   text        PRIMARY KEY,
    token      bigint      NOT NULL CHECK (token >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
