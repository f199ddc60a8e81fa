-- Standing permissions: an approval answered "this session" (session_id set) or "always"
-- (session_id NULL) lets the same kind of action (pattern) go ahead without asking again,
-- until it is revoked. owner_id NULL: open mode (the first admin account adopts them).
CREATE TABLE grants (
    id          TEXT PRIMARY KEY,
    owner_id    TEXT REFERENCES users(id) ON DELETE CASCADE,
    session_id  TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    pattern     TEXT NOT NULL,
    created_at  REAL NOT NULL
);
CREATE UNIQUE INDEX grants_once ON grants (COALESCE(owner_id, ''), COALESCE(session_id, ''), pattern);
CREATE INDEX grants_by_session ON grants (session_id);
