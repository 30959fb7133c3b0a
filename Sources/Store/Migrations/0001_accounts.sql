-- Accounts: users (seed 000's fields plus password hash and time zone), the identities that sign them in,
-- refresh tokens (only their SHA-256 hashes), login events and per-period usage counters.

CREATE TABLE users (
    id                        text PRIMARY KEY,
    email                     text,
    email_verified            boolean     NOT NULL DEFAULT false,
    first_name                text,
    last_name                 text,
    profile_image_url         text,
    password_hash             text,
    time_zone                 text        NOT NULL DEFAULT 'UTC',
    email_reminders_enabled   boolean     NOT NULL DEFAULT true,
    stripe_customer_id        text,
    stripe_subscription_id    text,
    subscription_tier         text        NOT NULL DEFAULT 'free'
                                          CHECK (subscription_tier IN ('free', 'essentials', 'pro')),
    subscription_status       text        NOT NULL DEFAULT 'active'
                                          CHECK (subscription_status IN ('active', 'trialing', 'past_due', 'canceled', 'incomplete', 'unpaid')),
    subscription_renewal_date timestamptz,
    subscription_synced_at    timestamptz,
    remaining_scans           integer     NOT NULL DEFAULT 3 CHECK (remaining_scans >= 0),
    scan_reset_date           timestamptz NOT NULL,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now()
);
-- One account per email, whatever its case: the key for linking identities.
CREATE UNIQUE INDEX users_email_key ON users (lower(email)) WHERE email IS NOT NULL;
CREATE INDEX users_stripe_subscription ON users (stripe_subscription_id) WHERE stripe_subscription_id IS NOT NULL;
-- The scan reset finds due users by tier and date.
CREATE INDEX users_scan_reset ON users (subscription_tier, scan_reset_date);

-- How a user signs in: 'apple' (sub), 'password' (the lower-cased email), 'oidc:<issuer>' (sub).
CREATE TABLE identities (
    id         bigserial   PRIMARY KEY,
    user_id    text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider   text        NOT NULL,
    subject    text        NOT NULL,
    email      text,
    created_at timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider, subject)
);
CREATE INDEX identities_user ON identities (user_id);

-- Refresh tokens are opaque random strings; only their SHA-256 is kept. A family is one sign-in's chain of
-- rotations: presenting a rotated (replaced) token again revokes the whole family.
CREATE TABLE refresh_tokens (
    id          bigserial   PRIMARY KEY,
    user_id     text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash  bytea       NOT NULL UNIQUE,
    family_id   uuid        NOT NULL,
    device_id   text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    replaced_at timestamptz,
    revoked_at  timestamptz,
    revoked_reason text
);
CREATE INDEX refresh_tokens_user ON refresh_tokens (user_id);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);

CREATE TABLE login_events (
    id         bigserial   PRIMARY KEY,
    event_id   uuid        NOT NULL UNIQUE,
    user_id    text        NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       text        NOT NULL CHECK (kind IN ('signin', 'signout')),
    provider   text        NOT NULL,
    ip         text,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_events_user ON login_events (user_id, created_at DESC);

-- Counters per user, kind ('chat', …) and period (a local date 'YYYY-MM-DD' in the user's time zone).
CREATE TABLE usage_counters (
    user_id text    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind    text    NOT NULL,
    period  text    NOT NULL,
    used    integer NOT NULL DEFAULT 0 CHECK (used >= 0),
    PRIMARY KEY (user_id, kind, period)
);
