-- The SHA-256 of each photo's bytes: the strong ETag of GET meals/{id}/image, so a revalidation (If-None-Match) reads
-- these 32 bytes instead of the photo. Written with the photo (photos never change). Photos stored before this
-- migration have none and are hashed when served; retention deletes them within PHOTO_RETENTION_DAYS. Adding a
-- nullable column without a default rewrites nothing.
ALTER TABLE meal_photos ADD COLUMN sha256 bytea;
