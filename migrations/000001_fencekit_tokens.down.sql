DROP TABLE IF EXISTS fencekit_tokens;
