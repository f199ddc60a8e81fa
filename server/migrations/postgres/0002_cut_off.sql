-- An assistant message the provider stopped at a length limit (finish_reason "length").
ALTER TABLE messages ADD COLUMN cut_off BIGINT NOT NULL DEFAULT 0;
