-- What each account's kept files take, kept current as bytes come, go and change hands, so an
-- upload checks the account's limit by reading one row, not by adding up every file it keeps.
CREATE TABLE blob_usage (
    owner  TEXT PRIMARY KEY,
    bytes  INTEGER NOT NULL
);
INSERT INTO blob_usage (owner, bytes) SELECT owner, SUM(size) FROM blobs GROUP BY owner;
CREATE TRIGGER blob_usage_added AFTER INSERT ON blobs
BEGIN
    INSERT OR IGNORE INTO blob_usage (owner, bytes) VALUES (NEW.owner, 0);
    UPDATE blob_usage SET bytes = bytes + NEW.size WHERE owner = NEW.owner;
END;
CREATE TRIGGER blob_usage_removed AFTER DELETE ON blobs
BEGIN
    UPDATE blob_usage SET bytes = bytes - OLD.size WHERE owner = OLD.owner;
END;
CREATE TRIGGER blob_usage_moved AFTER UPDATE OF owner, size ON blobs
BEGIN
    UPDATE blob_usage SET bytes = bytes - OLD.size WHERE owner = OLD.owner;
    INSERT OR IGNORE INTO blob_usage (owner, bytes) VALUES (NEW.owner, 0);
    UPDATE blob_usage SET bytes = bytes + NEW.size WHERE owner = NEW.owner;
END;
