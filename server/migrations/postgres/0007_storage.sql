-- What each conversation's journal takes (its rows' payloads and frames, in bytes), kept as
-- rows are written; and what each share link's snapshot takes. With an account's files
-- (blob_usage) they make its storage, held to --max-storage-per-user.
ALTER TABLE sessions ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
UPDATE sessions SET bytes = COALESCE((SELECT SUM(octet_length(e.payload) + octet_length(e.frame))
    FROM run_events e WHERE e.session_id = sessions.id), 0);
ALTER TABLE shares ADD COLUMN bytes BIGINT NOT NULL DEFAULT 0;
UPDATE shares SET bytes = octet_length(snapshot);
