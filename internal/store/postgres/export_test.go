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
