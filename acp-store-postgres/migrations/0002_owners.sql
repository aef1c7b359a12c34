-- Version 2: sessions are owned by the identity that created them.
-- `owner` is the name of the identity (acp-agent's SessionMeta::owner); NULL is the unnamed
-- identity's, which every session recorded before this version becomes. session/list of an
-- identity reads only its own rows (the index keeps that a range scan); the owner is also
-- in the `meta` JSON of new rows, but this column is the one that counts.
ALTER TABLE acp_sessions ADD COLUMN owner TEXT;
CREATE INDEX acp_sessions_by_owner ON acp_sessions (owner, seq);
