-- Item metadata for filters: a query whose filter tests metadata equality
-- (eq, in) or a key's presence lists the items that pass through this index
-- instead of reading every item of the capsule (postgres.acceptedItems).
CREATE INDEX items_metadata ON items USING gin (metadata);
