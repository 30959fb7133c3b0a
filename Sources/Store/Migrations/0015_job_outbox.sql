-- Transactional enqueue: a job written in the same transaction as the rows that need it (a photo, the scan it
-- reserved), then put on its Redis queue at once after the commit and the row deleted; a row left behind by a crash
-- between the two is put there by the upkeep leader's relay. Enqueuing by the job's id twice makes one job.
CREATE TABLE job_outbox (
    job_id      uuid        PRIMARY KEY,
    kind        text        NOT NULL,
    payload     text        NOT NULL,
    owner       text,
    reservation text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_outbox_created ON job_outbox (created_at);
