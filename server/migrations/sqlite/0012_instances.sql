-- Which server instance runs a run, and until when its claim holds (it renews the lease while
-- the run goes on; once it has expired, any instance ends the run as interrupted, once).
ALTER TABLE runs ADD COLUMN owner_instance TEXT;
ALTER TABLE runs ADD COLUMN lease_expires_at REAL;
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE status = 'running';

-- What one instance asks of the instance that owns a run (Stop, an answered approval or
-- question), taken once by that instance.
CREATE TABLE run_commands (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    instance    TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('cancel', 'resolved')),
    body        TEXT NOT NULL,
    created_at  REAL NOT NULL,
    taken_at    REAL,
    result      TEXT
);
CREATE INDEX run_commands_waiting ON run_commands (instance) WHERE taken_at IS NULL;
CREATE INDEX run_commands_by_age ON run_commands (created_at);
