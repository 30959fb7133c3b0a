-- App Store subscriptions (StoreKit 2): the original transaction id names the subscription across renewals, and the
-- last verified signed transaction is kept so a sync can re-read its state without the app.
ALTER TABLE users ADD COLUMN appstore_original_transaction_id text;
ALTER TABLE users ADD COLUMN appstore_signed_transaction text;
CREATE UNIQUE INDEX users_appstore_original_transaction ON users (appstore_original_transaction_id)
    WHERE appstore_original_transaction_id IS NOT NULL;
-- An App Store subscription ends as expired (not renewed) or revoked (refunded, or revoked by family sharing).
ALTER TABLE users DROP CONSTRAINT users_subscription_status_check;
ALTER TABLE users ADD CONSTRAINT users_subscription_status_check
    CHECK (subscription_status IN ('active', 'trialing', 'past_due', 'canceled', 'incomplete', 'unpaid', 'expired', 'revoked'));
