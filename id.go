package agentmem

import "github.com/google/uuid"

// NewID returns a new unique, time-sortable identifier (a UUIDv7 in its
// canonical text form). IDs created later sort after earlier ones, so they
// can serve as stable keys in logs and stores.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only if the system's random source fails; fall back
		// to a random UUID rather than returning an empty ID.
		return uuid.NewString()
	}
	return id.String()
}
