-- Room kept back for a full disk: one row of 256 KiB the server removes when its journal can
-- no longer write, so that the turns running then can still be ended (their terminal rows
-- take a few pages), and puts back once there is room again.
CREATE TABLE reserve (b BLOB NOT NULL);
