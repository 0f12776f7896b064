package postgres

// FindItemSQL is FindItem's statement, for TestFindItemPlan.
const FindItemSQL = findItem

// EfSearchFloor is efSearchFloor, EfSearchSettings efSearchSettings and
// HNSWM hnswM, for TestEfSearchFloor.
var (
	EfSearchFloor    = efSearchFloor
	EfSearchSettings = efSearchSettings
	HNSWM            = hnswM
)

// KeywordRescoredSQL (with no item filter) and BoundsRescored are the
// statements that score chunks from their text when pg_textsearch's index
// gives nothing, for TestKeywordRescoredReadsMatches.
var (
	KeywordRescoredSQL = keywordRescoredSQL("")
	BoundsRescored     = boundsRescored
)
