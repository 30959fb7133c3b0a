-- A device claimed for a push about a job (jobs/push.yml): written before the push is sent, so a redelivered push
-- job never sends a device a second one (at most once per device), and deleted again only when the provider asked
-- for a retry (429, 5xx) or could not be reached. A device that goes takes its claims with it.
CREATE TABLE push_deliveries (
    job_id     uuid        NOT NULL,
    device_id  uuid        NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    -- The provider's id of the accepted push (APNs' `apns-id`, FCM's message name), to trace it with the provider;
    -- null until it is accepted.
    message_id text,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, device_id)
);
CREATE INDEX push_deliveries_device ON push_deliveries (device_id);
CREATE INDEX push_deliveries_claimed ON push_deliveries (claimed_at);
