-- What a settled turn shows folded (its answer, ending, usage and the worklog's counts), kept
-- beside its journal so that a page carries this instead of every row. The journal stays the
-- source of truth: a snapshot is rebuilt from it whenever its version is not the current one.
CREATE TABLE turn_snapshots (
    run_id   TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    version  INTEGER NOT NULL,
    data     TEXT NOT NULL
) WITHOUT ROWID;
