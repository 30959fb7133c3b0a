-- Subscription sync (issue 4): the provider time of the subscription state applied to each user. Webhooks arrive
-- out of order and are retried for days, so a sync applies its state only when it is at least as new as the one
-- applied before (an event's `created`, or the time the subscription was read for app syncs and reconciliation).
ALTER TABLE users ADD COLUMN subscription_state_at timestamptz;
