-- What Settings shows of each signed-in browser, and how fresh its proof is: when it was last
-- seen, the address and browser it signed in from, the passkey it signed in with (removing
-- the passkey ends it), and when its password (or a passkey) was last given.
ALTER TABLE auth_tokens ADD COLUMN last_seen_at REAL;
ALTER TABLE auth_tokens ADD COLUMN proved_at REAL;
ALTER TABLE auth_tokens ADD COLUMN ip TEXT NOT NULL DEFAULT '';
ALTER TABLE auth_tokens ADD COLUMN agent TEXT NOT NULL DEFAULT '';
ALTER TABLE auth_tokens ADD COLUMN passkey_id TEXT;
UPDATE auth_tokens SET last_seen_at = created_at;
CREATE INDEX auth_tokens_by_passkey ON auth_tokens (passkey_id) WHERE passkey_id IS NOT NULL;

-- A passkey ceremony's state now travels sealed with the browser (see `ceremony.rs`): the
-- server keeps the nonces of those answered, until they expire, and the key that seals them.
DROP TABLE passkey_ceremonies;
CREATE TABLE passkey_answers (
    nonce       TEXT PRIMARY KEY,
    expires_at  REAL NOT NULL
);
CREATE INDEX passkey_answers_by_expiry ON passkey_answers (expires_at);
CREATE TABLE server_keys (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);

