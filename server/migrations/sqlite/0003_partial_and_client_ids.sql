-- An assistant message of a turn that did not complete keeps what was streamed, flagged partial.
ALTER TABLE messages ADD COLUMN partial INTEGER NOT NULL DEFAULT 0;
-- The id the browser gave a message it sent: a retried send finds the first one instead of
-- starting the turn twice.
ALTER TABLE messages ADD COLUMN client_id TEXT;
CREATE UNIQUE INDEX messages_by_client_id ON messages (session_id, client_id)
    WHERE client_id IS NOT NULL;
ALTER TABLE queued_messages ADD COLUMN client_id TEXT;
CREATE UNIQUE INDEX queued_by_client_id ON queued_messages (session_id, client_id)
    WHERE client_id IS NOT NULL;
