ALTER TABLE fencekit_leases DROP COLUMN identity;
