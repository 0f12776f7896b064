package capsule

import (
	"sync/atomic"
	"time"

	"capsuled/internal/domain"
)

// ingestCounts are this process's ingestion outcomes since it started (the
// HTTP layer exports them as metrics; each replica counts its own jobs).
type ingestCounts struct {
	indexedItems, failedItems, chunks, nanos atomic.Int64
}

func (c *ingestCounts) indexed(chunks int, took time.Duration) {
	c.indexedItems.Add(1)
	c.chunks.Add(int64(chunks))
	c.nanos.Add(int64(took))
}

func (c *ingestCounts) failed(took time.Duration) {
	c.failedItems.Add(1)
	c.nanos.Add(int64(took))
}

// IngestCounts returns the items this process's ingestion jobs indexed and
// failed since it started, the chunks they indexed and the time they took.
// A job whose item changed while it worked (its result discarded) is not
// counted.
func (s *Service) IngestCounts() domain.IngestCounts {
	return domain.IngestCounts{
		Indexed: s.counts.indexedItems.Load(),
		Failed:  s.counts.failedItems.Load(),
		Chunks:  s.counts.chunks.Load(),
		Seconds: time.Duration(s.counts.nanos.Load()).Seconds(),
	}
}
