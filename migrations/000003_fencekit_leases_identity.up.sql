-- fencekit leases: who holds each lease (lease.Options.Identity, default
-- "<hostname>/<pid>"), written with every grant and shown by Inspect and
-- fencectl. Rows granted before this migration read ''.
ALTER TABLE fencekit_leases ADD COLUMN identity text NOT NULL DEFAULT '';
