-- Magic-link sign-in: a single-use, short-lived token per request, kept only as its SHA-256.
CREATE TABLE magic_links (
    token_hash  bytea       PRIMARY KEY,
    user_id     text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz
);
CREATE INDEX magic_links_user ON magic_links (user_id);
CREATE INDEX magic_links_expires ON magic_links (expires_at);
