DROP TABLE IF EXISTS fencekit_leases_advisory;
