-- Room kept back for a full disk (SQLite's: see migrations/sqlite/0020_reserve.sql). Empty on
-- PostgreSQL, which keeps its own room; the table is here so that both hold the same tables.
CREATE TABLE reserve (b BYTEA NOT NULL);
