package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentmem/agentmem/api"
	"github.com/agentmem/agentmem/forget"
)

// forgetUser serves DELETE /v1/users/{user}: erases the user's sessions,
// facts, memory blocks and recall documents in the caller's tenant
// (forget.User) and answers what it erased. A failure part way answers
// the error; the call is safe to repeat and a retry finishes the job.
func (s *Server) forgetUser(w http.ResponseWriter, r *http.Request) {
	user, e := factsUser(r)
	if e != nil {
		writeError(w, e)
		return
	}
	reason := strings.TrimSpace(r.URL.Query().Get("reason"))
	if len(reason) > MaxReasonBytes {
		writeError(w, errInvalid("reason", "is %d bytes, more than the %d allowed", len(reason), MaxReasonBytes))
		return
	}
	if reason == "" {
		reason = "the user was forgotten through the API"
	}
	cfg := forget.Config{Sessions: s.svc, Facts: s.cfg.Facts, Blocks: s.cfg.Blocks, Recall: s.cfg.Recall, By: who(r), Reason: reason}
	if s.index != nil && s.cfg.Recall != nil {
		// The index follows the log: the user's deleted sessions are out
		// of it only once the follower has read their deletion.
		cfg.Sync = func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, s.cfg.IndexWait)
			defer cancel()
			return s.index.Sync(ctx)
		}
	}
	out, err := forget.User(r.Context(), cfg, Tenant(r), user)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, api.ForgetUserResponse{Sessions: out.Sessions, Facts: out.Facts, Documents: out.Documents, Blocks: out.Blocks})
	case r.Context().Err() != nil:
		s.fail(w, r, "forget_user", r.Context().Err())
	case errors.Is(err, forget.ErrIndexBehind) && errors.Is(err, context.DeadlineExceeded):
		writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: api.CodeIndexBehind, RetryAfter: 1,
			Message: fmt.Sprintf("the recall index has not followed the log within %v; retry: the erasure goes on where it stopped", s.cfg.IndexWait), cause: err})
	default:
		s.fail(w, r, "forget_user", err)
	}
}
