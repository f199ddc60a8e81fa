-- Where a conversation sits in the list: pinned to the top, archived out of it, or deleted
-- (kept a few minutes for Undo, then removed with its journal).
ALTER TABLE sessions ADD COLUMN pinned_at REAL;
ALTER TABLE sessions ADD COLUMN archived_at REAL;
ALTER TABLE sessions ADD COLUMN deleted_at REAL;
CREATE INDEX sessions_deleted ON sessions (deleted_at) WHERE deleted_at IS NOT NULL;
