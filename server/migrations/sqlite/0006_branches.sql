-- The turns of a session form a tree. A turn follows the turn before it on its branch
-- (parent_run_id, NULL for a first turn); a retry or an edit puts a new turn beside the one it
-- replaces (the same parent), so that earlier versions stay. A session shows one branch: the
-- path from its first turn to head_run_id (NULL: to its newest turn).
ALTER TABLE runs ADD COLUMN parent_run_id TEXT REFERENCES runs(id) ON DELETE CASCADE;
-- Until now every session was one line of turns: each follows the one made before it.
UPDATE runs SET parent_run_id = (
    SELECT p.id FROM runs p
    WHERE p.session_id = runs.session_id
      AND (p.created_at < runs.created_at OR (p.created_at = runs.created_at AND p.id < runs.id))
    ORDER BY p.created_at DESC, p.id DESC
    LIMIT 1
);
CREATE INDEX runs_by_parent ON runs (session_id, parent_run_id, created_at);
ALTER TABLE sessions ADD COLUMN head_run_id TEXT;
