-- Read-only links to a conversation: a snapshot of the branch its owner saw when sharing it
-- (answers and a summary of the work; no attachments' bytes, paths or approvals), reached
-- by an unguessable token. Revoking deletes the row; so do the conversation's removal (a
-- deleted conversation's links lead nowhere; restored, they lead again) and the account's.
-- owner_id NULL: open mode.
CREATE TABLE shares (
    id          TEXT PRIMARY KEY,
    token       TEXT NOT NULL UNIQUE,
    owner_id    TEXT REFERENCES users(id) ON DELETE CASCADE,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    snapshot    TEXT NOT NULL,
    created_at  REAL NOT NULL
);
CREATE INDEX shares_by_owner ON shares (owner_id, created_at);
CREATE INDEX shares_by_session ON shares (session_id);
