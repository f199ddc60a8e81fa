-- Signing in with a passkey names no account until a key answers: a ceremony of sign-in
-- belongs to nobody (user_id NULL). Ceremonies live minutes; those in progress are dropped.
DROP TABLE passkey_ceremonies;
CREATE TABLE passkey_ceremonies (
    id          TEXT PRIMARY KEY,
    user_id     TEXT REFERENCES users(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    state       TEXT NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX passkey_ceremonies_by_user ON passkey_ceremonies (user_id, kind, expires_at);
CREATE INDEX passkey_ceremonies_by_expiry ON passkey_ceremonies (expires_at);
