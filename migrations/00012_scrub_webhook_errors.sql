-- Errors recorded before deliveries scrubbed them (decisions.md, "Errors
-- keep no secrets") may name an endpoint with its credentials and query
-- string (Go's url.Error prints the whole URL) and hold the control
-- characters of a subscriber's answer. They are rewritten as the service
-- now writes them, as near as SQL comes: every URL in the text loses its
-- user info, query string and fragment; an escape character becomes the
-- text \x1b and any other control character "?". New errors are scrubbed
-- before they are written (domain.ScrubError), and reads scrub again.
-- Attempts and deliveries are kept for WEBHOOK_RETENTION only, so the
-- rewrite touches a bounded number of rows.

-- +goose Up
UPDATE webhook_attempts SET error = regexp_replace(
		regexp_replace(replace(error, chr(27), '\x1b'), '[[:cntrl:]]', '?', 'g'),
		'([A-Za-z][A-Za-z0-9+.-]*://)([^[:space:]"''<>\\/@?#]*@)?([^[:space:]"''<>\\?#]*)[^[:space:]"''<>\\]*', '\1\3', 'g')
WHERE error ~ '://|[[:cntrl:]]';

UPDATE webhook_deliveries SET last_error = regexp_replace(
		regexp_replace(replace(last_error, chr(27), '\x1b'), '[[:cntrl:]]', '?', 'g'),
		'([A-Za-z][A-Za-z0-9+.-]*://)([^[:space:]"''<>\\/@?#]*@)?([^[:space:]"''<>\\?#]*)[^[:space:]"''<>\\]*', '\1\3', 'g')
WHERE last_error ~ '://|[[:cntrl:]]';

-- +goose Down
-- What was scrubbed is gone; nothing to undo.
SELECT 1;
