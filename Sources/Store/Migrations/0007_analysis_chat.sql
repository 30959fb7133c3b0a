-- Scans are reserved when a photo is accepted, charged when its analysis succeeds and refunded (once) when it
-- dies: the reservation row, keyed by the photo, makes each transition happen exactly once.
CREATE TABLE scan_reservations (
    photo_id    bigint      PRIMARY KEY REFERENCES meal_photos (id) ON DELETE CASCADE,
    user_id     text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status      text        NOT NULL DEFAULT 'reserved' CHECK (status IN ('reserved', 'charged', 'refunded')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    settled_at  timestamptz
);
CREATE INDEX scan_reservations_user ON scan_reservations (user_id);

-- A chat answer is stored with the follow-up questions the model suggested.
ALTER TABLE chat_messages ALTER COLUMN follow_up_questions DROP DEFAULT;
ALTER TABLE chat_messages ALTER COLUMN follow_up_questions TYPE jsonb USING to_jsonb(follow_up_questions);
ALTER TABLE chat_messages ALTER COLUMN follow_up_questions SET DEFAULT '[]'::jsonb;
