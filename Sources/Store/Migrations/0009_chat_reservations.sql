-- The chat a message holds against its day's limit: reserved when the message is accepted, then charged (its
-- answer was stored) or refunded (its job died), each at most once, as a scan is for a photo.
CREATE TABLE chat_reservations (
    message_id  uuid        PRIMARY KEY,
    user_id     text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    day         text        NOT NULL,
    job_id      uuid,
    status      text        NOT NULL DEFAULT 'reserved' CHECK (status IN ('reserved', 'charged', 'refunded')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    settled_at  timestamptz
);
CREATE INDEX chat_reservations_user ON chat_reservations (user_id);
CREATE INDEX chat_reservations_open ON chat_reservations (created_at) WHERE status = 'reserved';
