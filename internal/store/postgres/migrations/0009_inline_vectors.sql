-- Chunk vectors stay in the row (STORAGE MAIN) instead of pgvector's
-- default, EXTERNAL: a row of a 384-d vector (1,540 bytes), its text and its
-- tsvector is over the 2 kB TOAST threshold, and the vector was the value
-- moved out of line, so every exact score (ChunkCosines, a filter's exact
-- scan, the HNSW index's width check) read it through the TOAST table:
-- about 12 buffer reads a chunk. Now the text and the tsvector are
-- compressed or moved out instead. This changes only rows written from now
-- on; `VACUUM FULL chunks` rewrites the older ones (docs/deploy.md).
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN;
