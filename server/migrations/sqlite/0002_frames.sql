-- Each journal row also keeps its SSE encoding, so a replay is one aggregate over stored text.
ALTER TABLE run_events ADD COLUMN frame TEXT NOT NULL DEFAULT '';
