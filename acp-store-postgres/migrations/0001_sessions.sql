-- Version 1: sessions and their histories.
-- A session's row: its id, the cwd session/list filters on, the whole SessionMeta as JSON
-- text (modes, config options, title, times), and the number its next event gets.
CREATE TABLE acp_sessions (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    cwd TEXT NOT NULL,
    meta TEXT NOT NULL,
    next_event BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX acp_sessions_by_cwd ON acp_sessions (cwd, seq);

-- A session's history: one StoredEvent per row as JSON text, numbered from 0 in the order
-- appended (an append takes the session row's lock, so numbers never interleave).
CREATE TABLE acp_events (
    session_seq BIGINT NOT NULL REFERENCES acp_sessions (seq) ON DELETE CASCADE,
    n BIGINT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_seq, n)
);
