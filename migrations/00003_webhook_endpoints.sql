-- +goose Up
-- An endpoint that answered 410 Gone is disabled here until an operator
-- replays one of its deliveries (matchctl webhooks replay), which clears it.
CREATE TABLE webhook_endpoint_state (
    endpoint_url text PRIMARY KEY,
    disabled_at  timestamptz NOT NULL DEFAULT now(),
    reason       text NOT NULL
);

-- replays counts operator replays of a delivery: each one is queued under a
-- task id of its own, with the same webhook-id.
ALTER TABLE webhook_deliveries ADD COLUMN replays integer NOT NULL DEFAULT 0;
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_pending_idx;
ALTER TABLE webhook_deliveries DROP COLUMN replays;
DROP TABLE webhook_endpoint_state;
