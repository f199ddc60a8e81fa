-- Files people attach to their messages. The bytes are kept once per account and content
-- (`blobs`, by SHA-256; '' is the account of open mode); an attachment names them, belongs
-- to its account, and from the moment it is sent to its conversation and message.
CREATE TABLE blobs (
    owner       TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    size        INTEGER NOT NULL,
    data        BLOB NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (owner, sha256)
);
CREATE TABLE attachments (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    name        TEXT NOT NULL,
    mime        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    session_id  TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    message_id  TEXT REFERENCES messages(id) ON DELETE CASCADE,
    created_at  REAL NOT NULL
);
CREATE INDEX attachments_by_blob ON attachments (owner, sha256);
CREATE INDEX attachments_by_message ON attachments (message_id);
CREATE INDEX attachments_unsent ON attachments (created_at) WHERE message_id IS NULL;
-- What a message carries, as it was sent: JSON [{id, name, mime, size}] (NULL: nothing).
ALTER TABLE messages ADD COLUMN attachments TEXT;
-- The attachments a waiting follow-up will carry: JSON [id] (NULL: none).
ALTER TABLE queued_messages ADD COLUMN attachments TEXT;
-- Bytes no attachment names any more go with the last one that did (a purged conversation's
-- files, an upload never sent): the cost is per attachment removed, never a sweep.
CREATE TRIGGER blobs_unused AFTER DELETE ON attachments
WHEN NOT EXISTS (SELECT 1 FROM attachments WHERE owner = OLD.owner AND sha256 = OLD.sha256)
BEGIN
    DELETE FROM blobs WHERE owner = OLD.owner AND sha256 = OLD.sha256;
END;
