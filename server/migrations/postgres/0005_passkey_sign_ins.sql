-- Signing in with a passkey names no account until a key answers: a ceremony of sign-in
-- belongs to nobody (user_id NULL).
ALTER TABLE passkey_ceremonies ALTER COLUMN user_id DROP NOT NULL;
