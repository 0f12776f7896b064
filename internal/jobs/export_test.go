package jobs

import (
	"time"

	"github.com/riverqueue/river"
)

// ReindexEvery makes river's index maintenance of r run every d.
func ReindexEvery(r Run, d time.Duration) Run {
	r.reindexSchedule = river.PeriodicInterval(d)
	return r
}
