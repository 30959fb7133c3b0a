-- With rotation on (REFRESH_TOKEN_ROTATION), a rotated token keeps the random salt its successor was derived from
-- (successor = HMAC-SHA256(salt, token)): a retried or concurrent refresh within the reuse interval gets the same
-- successor back, and the server still stores no token, only hashes.
ALTER TABLE refresh_tokens ADD COLUMN rotation_salt bytea;
