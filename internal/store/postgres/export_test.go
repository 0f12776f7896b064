package postgres

// FindItemSQL is FindItem's statement, for TestFindItemPlan.
const FindItemSQL = findItem
