-- Accounts, their sign-in tokens, and who owns each session.

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE COLLATE NOCASE,
    -- argon2id, in the PHC string format (algorithm, parameters and salt included).
    password_hash  TEXT NOT NULL,
    admin          INTEGER NOT NULL DEFAULT 0,
    created_at     REAL NOT NULL
);

-- A signed-in browser: the SHA-256 of its cookie's token, never the token.
CREATE TABLE auth_tokens (
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX auth_tokens_by_user ON auth_tokens (user_id);

-- NULL: made with no account (open mode); the first admin account adopts these.
ALTER TABLE sessions ADD COLUMN owner_id TEXT REFERENCES users(id) ON DELETE SET NULL;
CREATE INDEX sessions_by_owner ON sessions (owner_id, updated_at);
