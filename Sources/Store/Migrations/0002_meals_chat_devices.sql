-- What users make: meals (scanned or synced from the app), their photos, chat messages, push devices.

CREATE TABLE meal_photos (
    id           bigserial   PRIMARY KEY,
    user_id      text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    content_type text        NOT NULL,
    byte_size    integer     NOT NULL,
    bytes        bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX meal_photos_user ON meal_photos (user_id);
-- Photos are deleted after their retention period, oldest first.
CREATE INDEX meal_photos_created ON meal_photos (created_at);

CREATE TABLE meals (
    id               bigserial        PRIMARY KEY,
    user_id          text             NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- The app's id for a meal made offline (meals/sync is idempotent on it) …
    local_id         text,
    -- … or the analysis job that wrote it (a re-delivered job writes no second meal).
    job_id           uuid             UNIQUE,
    photo_id         bigint           REFERENCES meal_photos (id) ON DELETE SET NULL,
    name             text             NOT NULL,
    carb_estimate    double precision NOT NULL CHECK (carb_estimate >= 0 AND carb_estimate <= 1000),
    confidence_low   double precision,
    confidence_high  double precision,
    confidence_level double precision CHECK (confidence_level >= 0 AND confidence_level <= 1),
    analysis         text,
    created_at       timestamptz      NOT NULL DEFAULT now(),
    updated_at       timestamptz      NOT NULL DEFAULT now(),
    UNIQUE (user_id, local_id)
);
-- History pages (newest first), insights windows and delta sync.
CREATE INDEX meals_user_created ON meals (user_id, created_at DESC, id DESC);
CREATE INDEX meals_user_updated ON meals (user_id, updated_at);

CREATE TABLE chat_messages (
    id                  bigserial   PRIMARY KEY,
    user_id             text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    job_id              uuid        UNIQUE,
    message             text        NOT NULL,
    response            text        NOT NULL,
    message_type        text        NOT NULL,
    follow_up_questions text[]      NOT NULL DEFAULT '{}',
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_messages_user ON chat_messages (user_id, created_at DESC, id DESC);

-- One row per push token: a token that moves to another user moves with it.
CREATE TABLE devices (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      text        REFERENCES users (id) ON DELETE CASCADE,
    token        text        NOT NULL UNIQUE,
    platform     text        NOT NULL CHECK (platform IN ('ios', 'android')),
    device_model text,
    os_version   text,
    app_version  text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX devices_user ON devices (user_id);
