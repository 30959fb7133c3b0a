-- Delta sync reads "meals changed at or after T". A change is stamped with the time of the statement that made
-- it (clock_timestamp), not the start of its transaction (now), and every UPDATE re-stamps it: together with the
-- horizon of transactions still writing meals (see Meals.changes), no committed change falls behind a cursor.
ALTER TABLE meals ALTER COLUMN updated_at SET DEFAULT clock_timestamp();

CREATE FUNCTION meals_touch_updated_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := clock_timestamp();
    RETURN NEW;
END;
$$;

CREATE TRIGGER meals_touch_updated_at BEFORE UPDATE ON meals
    FOR EACH ROW EXECUTE FUNCTION meals_touch_updated_at();
