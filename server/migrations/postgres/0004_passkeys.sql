-- Passkeys: WebAuthn credentials an account added (after a password sign-in) to sign in
-- with. `passkey` is the credential as webauthn-rs keeps it (JSON: its public key, counter).
CREATE TABLE passkeys (
    id             TEXT PRIMARY KEY,
    user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    credential_id  TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL,
    passkey        TEXT NOT NULL,
    created_at     DOUBLE PRECISION NOT NULL,
    last_used_at   DOUBLE PRECISION
);
CREATE INDEX passkeys_by_user ON passkeys (user_id);

-- A ceremony between its two requests (registering or signing in): the state webauthn-rs
-- checks the answer against, taken once (deleted as it is read), until it expires.
CREATE TABLE passkey_ceremonies (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    state       TEXT NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX passkey_ceremonies_by_user ON passkey_ceremonies (user_id, kind, expires_at);
CREATE INDEX passkey_ceremonies_by_expiry ON passkey_ceremonies (expires_at);
