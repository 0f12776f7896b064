package postgres

// FindItemSQL is FindItem's statement, for TestFindItemPlan.
const FindItemSQL = findItem

// EfSearchFloor is efSearchFloor, and EfSearchSettings efSearchSettings,
// for TestEfSearchFloor.
var (
	EfSearchFloor    = efSearchFloor
	EfSearchSettings = efSearchSettings
)
