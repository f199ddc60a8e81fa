-- Sessions, their transcript, and the durable run journal.

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    -- 'default' until a title is set; 'agent' when the agent named it; 'manual' after a rename.
    title_source  TEXT NOT NULL DEFAULT 'default',
    created_at    REAL NOT NULL,
    updated_at    REAL NOT NULL
);

CREATE TABLE messages (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL,
    run_id          TEXT,
    terminal_state  TEXT,
    usage           TEXT,
    created_at      REAL NOT NULL,
    UNIQUE (session_id, position)
);

CREATE TABLE runs (
    id               TEXT PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id          TEXT NOT NULL,
    user_message_id  TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('running', 'finished')),
    terminal_state   TEXT,
    last_seq         INTEGER NOT NULL DEFAULT 0,
    created_at       REAL NOT NULL,
    finished_at      REAL
);
CREATE INDEX runs_by_session ON runs (session_id, created_at);
-- A session runs at most one turn at a time.
CREATE UNIQUE INDEX one_running_run_per_session ON runs (session_id) WHERE status = 'running';

CREATE TABLE run_events (
    run_id          TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    event_id        TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    type            TEXT NOT NULL,
    created_at      REAL NOT NULL,
    terminal        INTEGER NOT NULL,
    terminal_state  TEXT,
    payload         TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
-- A run ends exactly once.
CREATE UNIQUE INDEX one_terminal_event_per_run ON run_events (run_id) WHERE terminal = 1;

CREATE TABLE interactions (
    run_id    TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    id        TEXT NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('approval', 'clarify')),
    status    TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'closed')),
    request   TEXT NOT NULL,
    response  TEXT,
    PRIMARY KEY (run_id, id)
);

CREATE TABLE queued_messages (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    content     TEXT NOT NULL,
    created_at  REAL NOT NULL
);
CREATE INDEX queued_by_session ON queued_messages (session_id, created_at);
