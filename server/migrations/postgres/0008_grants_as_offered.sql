-- A standing permission is now exactly what its card offered: a command with its arguments,
-- a file, or a folder's files (`write_file notes/**`). The wide ones kept before (every `rm
-- -rf`, every write of the workspace) match nothing any more: they go, and the next such
-- action asks.
DELETE FROM grants WHERE pattern IN ('rm -rf', 'write_file');
