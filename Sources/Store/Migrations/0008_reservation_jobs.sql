-- The job that analyses a reserved photo, so a sweep can refund the scans of jobs that died without their handler
-- running (a job buried after its workers kept dying never reaches the handler's own refund).
ALTER TABLE scan_reservations ADD COLUMN job_id uuid;
CREATE INDEX scan_reservations_open ON scan_reservations (created_at) WHERE status = 'reserved';
