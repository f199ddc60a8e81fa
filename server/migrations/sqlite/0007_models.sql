-- The model a session asks for (NULL: the server's default) and the model each turn was
-- answered by (NULL: a backend that offers no choice of model).
ALTER TABLE sessions ADD COLUMN model TEXT;
ALTER TABLE runs ADD COLUMN model TEXT;
