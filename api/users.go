package api

// ForgetUserResponse is the body of DELETE /v1/users/{user}: how much of
// the user this call erased in the caller's tenant. A retry after a
// failure counts only what the failed call left.
type ForgetUserResponse struct {
	// Sessions is the number of the user's sessions deleted, with their
	// logs.
	Sessions int `json:"sessions"`
	// Facts is the number of the user's facts forgotten, superseded ones
	// too.
	Facts int `json:"facts"`
	// Documents is the number of recall documents deleted whose metadata
	// names the user: the turns of the user's sessions, and documents put
	// with it.
	Documents int `json:"documents"`
	// Blocks is the number of memory blocks deleted: the user's own and
	// those of the user's sessions.
	Blocks int `json:"blocks"`
}
