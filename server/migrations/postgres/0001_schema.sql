-- The schema of migrations/sqlite up to 0012, in PostgreSQL's types. Times are seconds since
-- the epoch (DOUBLE PRECISION), flags 0 or 1 (as in SQLite), JSON is kept as text: the store
-- reads and writes the same values on both engines.

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    -- argon2id, in the PHC string format (algorithm, parameters and salt included).
    password_hash  TEXT NOT NULL,
    admin          BIGINT NOT NULL DEFAULT 0,
    created_at     DOUBLE PRECISION NOT NULL
);
-- Names are unique without regard to case (SQLite's COLLATE NOCASE).
CREATE UNIQUE INDEX users_by_name ON users (lower(name));

-- A signed-in browser: the SHA-256 of its cookie's token, never the token.
CREATE TABLE auth_tokens (
    token_hash  TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX auth_tokens_by_user ON auth_tokens (user_id);

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    title         TEXT NOT NULL,
    -- 'default' until a title is set; 'prompt', 'agent' or 'manual' after.
    title_source  TEXT NOT NULL DEFAULT 'default',
    created_at    DOUBLE PRECISION NOT NULL,
    updated_at    DOUBLE PRECISION NOT NULL,
    -- NULL: made with no account (open mode); the first admin account adopts these.
    owner_id      TEXT REFERENCES users(id) ON DELETE SET NULL,
    -- The turn the session shows last (NULL: its newest).
    head_run_id   TEXT,
    -- The model it asks for (NULL: the server's default).
    model         TEXT,
    pinned_at     DOUBLE PRECISION,
    archived_at   DOUBLE PRECISION,
    deleted_at    DOUBLE PRECISION
);
CREATE INDEX sessions_by_owner ON sessions (owner_id, updated_at);
CREATE INDEX sessions_deleted ON sessions (deleted_at) WHERE deleted_at IS NOT NULL;

CREATE TABLE messages (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    position        BIGINT NOT NULL,
    role            TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content         TEXT NOT NULL,
    run_id          TEXT,
    terminal_state  TEXT,
    usage           TEXT,
    created_at      DOUBLE PRECISION NOT NULL,
    partial         BIGINT NOT NULL DEFAULT 0,
    client_id       TEXT,
    -- What it carries, as it was sent: JSON [{id, name, mime, size}] (NULL: nothing).
    attachments     TEXT,
    UNIQUE (session_id, position)
);
CREATE UNIQUE INDEX messages_by_client_id ON messages (session_id, client_id)
    WHERE client_id IS NOT NULL;
CREATE INDEX messages_by_run ON messages (run_id);

CREATE TABLE runs (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id           TEXT NOT NULL,
    user_message_id   TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('running', 'finished')),
    terminal_state    TEXT,
    last_seq          BIGINT NOT NULL DEFAULT 0,
    created_at        DOUBLE PRECISION NOT NULL,
    finished_at       DOUBLE PRECISION,
    -- The turn it follows on its branch (NULL: a first turn).
    parent_run_id     TEXT REFERENCES runs(id) ON DELETE CASCADE,
    -- The model that answered it (NULL: a backend that offers no choice).
    model             TEXT,
    -- The instance that runs it and until when its lease holds.
    owner_instance    TEXT,
    lease_expires_at  DOUBLE PRECISION
);
CREATE INDEX runs_by_session ON runs (session_id, created_at);
CREATE INDEX runs_by_parent ON runs (session_id, parent_run_id, created_at);
-- A session runs at most one turn at a time.
CREATE UNIQUE INDEX one_running_run_per_session ON runs (session_id) WHERE status = 'running';
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE status = 'running';

CREATE TABLE run_events (
    run_id          TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq             BIGINT NOT NULL,
    event_id        TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    type            TEXT NOT NULL,
    created_at      DOUBLE PRECISION NOT NULL,
    terminal        BIGINT NOT NULL,
    terminal_state  TEXT,
    payload         TEXT NOT NULL,
    -- The row's SSE encoding: a replay is one aggregate over stored text.
    frame           TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, seq)
);
-- A run ends exactly once.
CREATE UNIQUE INDEX one_terminal_event_per_run ON run_events (run_id) WHERE terminal = 1;

-- rowid: the order rows were made in (SQLite keeps one of its own; the queries order by it).
CREATE TABLE interactions (
    run_id    TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    id        TEXT NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('approval', 'clarify')),
    status    TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'closed')),
    request   TEXT NOT NULL,
    response  TEXT,
    rowid     BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (run_id, id)
);

CREATE TABLE queued_messages (
    id           TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    content      TEXT NOT NULL,
    created_at   DOUBLE PRECISION NOT NULL,
    client_id    TEXT,
    -- The attachments it will carry: JSON [id] (NULL: none).
    attachments  TEXT,
    rowid        BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX queued_by_session ON queued_messages (session_id, created_at);
CREATE UNIQUE INDEX queued_by_client_id ON queued_messages (session_id, client_id)
    WHERE client_id IS NOT NULL;

-- What a settled turn shows folded, rebuilt from the journal whenever its version is old.
CREATE TABLE turn_snapshots (
    run_id   TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    version  BIGINT NOT NULL,
    data     TEXT NOT NULL
);

-- Standing permissions (session_id NULL: always; owner_id NULL: open mode).
CREATE TABLE grants (
    id          TEXT PRIMARY KEY,
    owner_id    TEXT REFERENCES users(id) ON DELETE CASCADE,
    session_id  TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    pattern     TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL
);
CREATE UNIQUE INDEX grants_once ON grants (COALESCE(owner_id, ''), COALESCE(session_id, ''), pattern);
CREATE INDEX grants_by_session ON grants (session_id);

-- Attached files: the bytes once per account and content ('' is open mode's account).
CREATE TABLE blobs (
    owner       TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    size        BIGINT NOT NULL,
    data        BYTEA NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (owner, sha256)
);
CREATE TABLE attachments (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    name        TEXT NOT NULL,
    mime        TEXT NOT NULL,
    size        BIGINT NOT NULL,
    session_id  TEXT REFERENCES sessions(id) ON DELETE CASCADE,
    message_id  TEXT REFERENCES messages(id) ON DELETE CASCADE,
    created_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX attachments_by_blob ON attachments (owner, sha256);
CREATE INDEX attachments_by_message ON attachments (message_id);
CREATE INDEX attachments_unsent ON attachments (created_at) WHERE message_id IS NULL;

-- Bytes no attachment names any more go with the last one that did.
CREATE FUNCTION blobs_unused() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM attachments WHERE owner = OLD.owner AND sha256 = OLD.sha256) THEN
        DELETE FROM blobs WHERE owner = OLD.owner AND sha256 = OLD.sha256;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER blobs_unused AFTER DELETE ON attachments
    FOR EACH ROW EXECUTE FUNCTION blobs_unused();

-- What each account's kept files take, kept current by triggers.
CREATE TABLE blob_usage (
    owner  TEXT PRIMARY KEY,
    bytes  BIGINT NOT NULL
);
CREATE FUNCTION blob_usage_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE blob_usage SET bytes = bytes - OLD.size WHERE owner = OLD.owner;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO blob_usage (owner, bytes) VALUES (NEW.owner, NEW.size)
            ON CONFLICT (owner) DO UPDATE SET bytes = blob_usage.bytes + EXCLUDED.bytes;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER blob_usage_kept AFTER INSERT OR DELETE OR UPDATE OF owner, size ON blobs
    FOR EACH ROW EXECUTE FUNCTION blob_usage_kept();

-- What one instance asks of the instance that owns a run, taken once by that instance.
CREATE TABLE run_commands (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    instance    TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('cancel', 'resolved')),
    body        TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    taken_at    DOUBLE PRECISION,
    result      TEXT
);
CREATE INDEX run_commands_waiting ON run_commands (instance) WHERE taken_at IS NULL;
CREATE INDEX run_commands_by_age ON run_commands (created_at);
