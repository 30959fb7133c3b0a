-- `Idempotency-Key` (IETF httpapi draft): one row per key a user sent on a POST that charges or stores something.
-- A retry with the same key and the same request answers what the first answered: the job it started (`job_id`,
-- answered as the job stands now) or the stored answer (`status`, `body`). A row whose status is null and that has no
-- job is a request still being answered. Keys live 24 hours (photo-retention's hourly sweep deletes older ones).
CREATE TABLE idempotency_keys (
    user_id     text        REFERENCES users (id) ON DELETE CASCADE,
    key         text        NOT NULL,
    route       text        NOT NULL,
    fingerprint bytea       NOT NULL,
    job_id      text,
    status      integer,
    body        bytea,
    created_at  timestamptz NOT NULL DEFAULT now(),
    claimed_at  timestamptz NOT NULL DEFAULT now()
);
-- Anonymous callers (devices/register without a token) share one key space: '' stands for no user.
CREATE UNIQUE INDEX idempotency_keys_key ON idempotency_keys (COALESCE(user_id, ''), key);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
