package store

// Exported for the tests of package store_test.
var (
	ValidateCompaction = validateCompaction
	ValidateImport     = validateImport
)
