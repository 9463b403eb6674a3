// Package forget erases everything a tenant holds about one user: the
// user's sessions (with their logs and memory blocks), facts, memory
// blocks and recall documents. It is what DELETE /v1/users/{user} calls,
// and what any other front end (MCP, a command) can call.
//
// The erasure is a sequence of steps, each safe to repeat, not one
// transaction, since the parts live in different stores. When a step
// fails, User returns what it erased so far with the error, and calling it
// again finishes the job.
package forget

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/facts"
	"github.com/agentmem/agentmem/recall"
	"github.com/agentmem/agentmem/sessions"
	"github.com/agentmem/agentmem/store"
)

// Config is what User erases from. Sessions is required; a nil Facts,
// Blocks or Recall is a part the caller does not keep, and is skipped.
type Config struct {
	// Sessions deletes the user's sessions (sessions.Service.Delete).
	Sessions *sessions.Service
	Facts    *facts.Memory
	Blocks   *blocks.Memory
	Recall   *recall.Index
	// Sync, when the recall index follows the sessions' log in the
	// background (recallview.Follower.Sync), waits until the index has
	// applied every write committed before it. Nil: the index is written
	// with each write, and there is nothing to wait for.
	Sync func(ctx context.Context) error
	// By and Reason are recorded in the facts' audit log for each fact
	// forgotten (facts.Memory.ForgetUser); empty By is "forget", empty
	// Reason "the user was forgotten".
	By, Reason string
}

// Erased counts what one call of User erased. A repeated call counts
// only what was left.
type Erased struct {
	Sessions  int `json:"sessions"`
	Facts     int `json:"facts"`
	Documents int `json:"documents"`
	Blocks    int `json:"blocks"`
}

// ErrIndexBehind wraps the error of Config.Sync: the recall index did not
// reach the user's deleted sessions in time. Nothing is left half-done;
// calling User again finishes the erasure.
var ErrIndexBehind = errors.New("forget: the recall index is behind the log")

// User erases everything the tenant holds about the user, in this order:
//
//  1. The recall documents whose metadata names the user
//     (recall.MetaUser: the turns of the user's sessions, and documents
//     put with it), after Sync, so that what the index is about to add
//     of the user's sessions is counted too.
//  2. The user's sessions (store.Session.UserID), newest first so that
//     branches go before the sessions they came from, each with its
//     memory blocks and then its log. A branch of the user's session is
//     the user's too (it inherits its parent's user), so none keeps a
//     copy of the user's history.
//  3. The recall documents of the user again, after Sync: the index has
//     then followed the deletions, and a turn appended between steps 1
//     and 2 is gone too.
//  4. The user's facts, superseded ones too (facts.Memory.ForgetUser:
//     each leaves an audit entry without its text).
//  5. The user's own memory blocks, with their histories.
//
// Sessions go first among the stores that are written from them (the
// index, and facts extracted from turns), so that nothing the user's
// sessions hold is indexed or remembered again after its step. A session
// the user creates while User runs may outlive it; call User again once
// the user is inactive. Expired sessions are not listed, and are deleted
// by retention (store Prune), not here.
func User(ctx context.Context, cfg Config, tenant, user string) (Erased, error) {
	var out Erased
	if cfg.Sessions == nil {
		return out, errors.New("forget: Config.Sessions is required")
	}
	// Every part must take the user before any is erased.
	if err := facts.ValidateUser(tenant, user); err != nil {
		return out, err
	}
	if err := blocks.ValidateOwner(tenant, blocks.User(user)); err != nil {
		return out, err
	}
	by, reason := cfg.By, cfg.Reason
	if by == "" {
		by = "forget"
	}
	if reason == "" {
		reason = "the user was forgotten"
	}
	if err := documents(ctx, cfg, tenant, user, &out); err != nil {
		return out, err
	}
	ids, err := sessionsOf(ctx, cfg.Sessions, tenant, user)
	if err != nil {
		return out, err
	}
	for _, id := range ids {
		if cfg.Blocks != nil {
			n, err := deleteBlocks(ctx, cfg.Blocks, tenant, blocks.Session(id))
			if out.Blocks += n; err != nil {
				return out, err
			}
		}
		switch err := cfg.Sessions.Delete(ctx, tenant, id); {
		case err == nil:
			out.Sessions++
		case errors.Is(err, agentmem.ErrNotFound): // deleted meanwhile
		default:
			return out, fmt.Errorf("forget: deleting session %q: %w", id, err)
		}
	}
	if err := documents(ctx, cfg, tenant, user, &out); err != nil {
		return out, err
	}
	if cfg.Facts != nil {
		n, err := cfg.Facts.ForgetUser(ctx, tenant, user, by, reason)
		if out.Facts += n; err != nil {
			return out, fmt.Errorf("forget: facts: %w", err)
		}
	}
	if cfg.Blocks != nil {
		n, err := deleteBlocks(ctx, cfg.Blocks, tenant, blocks.User(user))
		if out.Blocks += n; err != nil {
			return out, err
		}
	}
	return out, nil
}

// documents waits for the index to follow the log, then clears the
// user's documents.
func documents(ctx context.Context, cfg Config, tenant, user string, out *Erased) error {
	if cfg.Recall == nil {
		return nil
	}
	if cfg.Sync != nil {
		if err := cfg.Sync(ctx); err != nil {
			return fmt.Errorf("%w: %w", ErrIndexBehind, err)
		}
	}
	n, err := cfg.Recall.Clear(ctx, tenant, recall.Filter{Metadata: map[string]string{recall.MetaUser: user}})
	if out.Documents += n; err != nil {
		return fmt.Errorf("forget: recall documents: %w", err)
	}
	return nil
}

// sessionsOf lists the IDs of the user's sessions in the tenant, newest
// first, damaged ones too (the store found them by their user).
func sessionsOf(ctx context.Context, svc *sessions.Service, tenant, user string) ([]string, error) {
	var ids []string
	req := store.ListRequest{Tenant: tenant, UserID: user, PageSize: 1000}
	for {
		resp, err := svc.List(ctx, req)
		if err != nil {
			return ids, fmt.Errorf("forget: listing sessions: %w", err)
		}
		for _, s := range resp.Sessions {
			ids = append(ids, s.ID)
		}
		for _, d := range resp.Damaged {
			ids = append(ids, d.ID)
		}
		if resp.NextPageToken == "" {
			return ids, nil
		}
		req.PageToken = resp.NextPageToken
	}
}

// deleteBlocks deletes the owner's blocks and returns how many there
// were.
func deleteBlocks(ctx context.Context, m *blocks.Memory, tenant string, owner blocks.Owner) (int, error) {
	bs, err := m.List(ctx, tenant, owner)
	if err != nil {
		return 0, fmt.Errorf("forget: memory blocks of %s: %w", owner, err)
	}
	if len(bs) == 0 {
		return 0, nil
	}
	if err := m.DeleteOwner(ctx, tenant, owner); err != nil {
		return 0, fmt.Errorf("forget: memory blocks of %s: %w", owner, err)
	}
	return len(bs), nil
}
