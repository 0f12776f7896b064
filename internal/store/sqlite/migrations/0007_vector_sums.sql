-- Per item, the number of its chunk vectors and their CRC-32C
-- (vecmath.Checksum, in idx order): what the retrieval engine checks its
-- vectors file against (VectorSums). NULL: not known, computed when next
-- asked. The store's own writes set them; these triggers forget them on
-- any other change of a chunk, so a write that does not set them (an older
-- binary's, a hand edit) can never leave a stale sum.
ALTER TABLE items ADD COLUMN vec_count INTEGER;
ALTER TABLE items ADD COLUMN vec_crc INTEGER;

CREATE TRIGGER chunks_sum_insert AFTER INSERT ON chunks BEGIN
    UPDATE items SET vec_count = NULL, vec_crc = NULL WHERE id = NEW.item_id AND vec_count IS NOT NULL;
END;
CREATE TRIGGER chunks_sum_delete AFTER DELETE ON chunks BEGIN
    UPDATE items SET vec_count = NULL, vec_crc = NULL WHERE id = OLD.item_id AND vec_count IS NOT NULL;
END;
CREATE TRIGGER chunks_sum_update AFTER UPDATE OF item_id, idx, vector ON chunks BEGIN
    UPDATE items SET vec_count = NULL, vec_crc = NULL WHERE id IN (OLD.item_id, NEW.item_id) AND vec_count IS NOT NULL;
END;

-- Every chunk row a capsule gains or loses counts here: a keyword index
-- file written at one count is that capsule's rows at that count, and only
-- then (kwfile.go).
ALTER TABLE capsules ADD COLUMN chunk_writes INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER chunks_writes_insert AFTER INSERT ON chunks BEGIN
    UPDATE capsules SET chunk_writes = chunk_writes + 1 WHERE id = NEW.capsule_id;
END;
CREATE TRIGGER chunks_writes_delete AFTER DELETE ON chunks BEGIN
    UPDATE capsules SET chunk_writes = chunk_writes + 1 WHERE id = OLD.capsule_id;
END;
CREATE TRIGGER chunks_writes_update AFTER UPDATE OF capsule_id, text ON chunks BEGIN
    UPDATE capsules SET chunk_writes = chunk_writes + 1 WHERE id IN (OLD.capsule_id, NEW.capsule_id);
END;
