package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/blocks"
	"github.com/agentmem/agentmem/tokenizer"
)

// Blocks is where Context finds the memory blocks of a session and of its
// user to show; *blocks.Memory is one.
type Blocks interface {
	List(ctx context.Context, tenant string, owner blocks.Owner) ([]blocks.Block, error)
}

// ownerDeleter is a Blocks that deletes an owner's blocks
// (*blocks.Memory): Delete deletes a session's with it.
type ownerDeleter interface {
	DeleteOwner(ctx context.Context, tenant string, owner blocks.Owner) error
}

// blockDeleter is a Blocks that deletes one block, at a version, too
// (*blocks.Memory): CleanBlocks deletes a deleted session's with it.
type blockDeleter interface {
	ownerDeleter
	Delete(ctx context.Context, k blocks.Key, e blocks.Edit) error
}

// CleanBlocks deletes the memory blocks a deleted session of a tenant left
// behind, and returns how many it deleted. Such a session was deleted by
// store.Store.Delete or Prune, which know nothing of blocks. When no
// session has its ID now, all of the session's blocks go. When a later
// session has it, only the blocks created before that session go, the
// deleted one's; those of the later session stay. Each goes only if it has
// not changed since it was read. It is idempotent, so that a follower of the
// store's deletions (package views/sessionblocks) can apply it again
// after a crash. Without Config.Blocks it does nothing.
//
// Telling the two sessions' blocks apart compares the blocks' creation
// times with the later session's, from the clocks of the processes (or
// database) that wrote them. Clocks apart by more than the time between a
// deletion and the new session's first block can misplace a block.
func (s *Service) CleanBlocks(ctx context.Context, tenant, id string) (int, error) {
	d, ok := s.cfg.Blocks.(blockDeleter)
	if !ok {
		return 0, nil
	}
	owner := blocks.Session(id)
	if blocks.ValidateOwner(tenant, owner) != nil {
		return 0, nil // no block can have this owner
	}
	own, err := s.cfg.Blocks.List(ctx, tenant, owner)
	if err != nil || len(own) == 0 {
		return 0, err
	}
	later, err := s.st.Get(ctx, tenant, id)
	if errors.Is(err, agentmem.ErrNotFound) {
		return len(own), d.DeleteOwner(ctx, tenant, owner)
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, b := range own {
		if !b.CreatedAt.Before(later.CreatedAt) {
			continue // the later session's
		}
		err := d.Delete(ctx, b.Key, blocks.Edit{By: "agentmem", IfVersion: b.Version})
		var ve *blocks.VersionError
		switch {
		case errors.Is(err, agentmem.ErrNotFound):
		case errors.As(err, &ve):
			// Changed since it was read (or deleted and made again by the
			// later session): read the session's blocks again.
			return n, fmt.Errorf("sessions: block %q of deleted session %q changed while it was deleted; reading it again: %w", b.Label, id, agentmem.ErrUnavailable)
		case err != nil:
			return n, err
		default:
			n++
		}
	}
	return n, nil
}

// blocksOf returns the blocks a session's context shows (blocks.Shown):
// its user's, when it has a user, then its own.
func (s *Service) blocksOf(ctx context.Context, tenant, sessionID, userID string) ([]blocks.Block, error) {
	if s.cfg.Blocks == nil {
		return nil, nil
	}
	var user []blocks.Block
	if userID != "" {
		var err error
		if user, err = s.cfg.Blocks.List(ctx, tenant, blocks.User(userID)); err != nil {
			return nil, err
		}
	}
	own, err := s.cfg.Blocks.List(ctx, tenant, blocks.Session(sessionID))
	if err != nil {
		return nil, err
	}
	return blocks.Shown(user, own), nil
}

// maxBlockFits bounds the fittings of a context with blocks. The first
// fitting leaves room for the blocks as a message of their own. That costs
// at least what appending them to the system prompt adds, since the
// message's overhead covers the separator's tokens. A tokenizer that merges
// across the join might need one more.
const maxBlockFits = 3

// fitWithBlocks fits the session's steps to what fit leaves after the
// blocks' text, and shows the text after the system prompt (withText).
// When the pinned steps and the blocks do not fit, the error is the
// *agentmem.BudgetError, whose Required counts the blocks.
func fitWithBlocks(fit int, text string, counter tokenizer.Counter, fitSteps func(budget int) (*agentmem.Context, error)) (*agentmem.Context, []agentmem.Message, int, error) {
	if text == "" {
		c, err := fitSteps(fit)
		if err != nil {
			return nil, nil, 0, err
		}
		return c, c.Messages, c.Tokens, nil
	}
	reserve := agentmem.MessageTokens(counter, agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(text)})
	for try := 1; ; try++ {
		// A budget of 0 is no budget: 1 is the smallest that fits
		// nothing, so that the budget error says what the pinned steps
		// need.
		c, err := fitSteps(max(fit-reserve, 1))
		var be *agentmem.BudgetError
		if errors.As(err, &be) {
			return nil, nil, 0, &agentmem.BudgetError{Budget: fit, Required: be.Required + reserve}
		}
		if err != nil {
			return nil, nil, 0, err
		}
		msgs, used := withText(c.Messages, text, counter)
		if c.Tokens+used <= fit {
			return c, msgs, c.Tokens + used, nil
		}
		if try == maxBlockFits {
			return nil, nil, 0, &agentmem.BudgetError{Budget: fit, Required: c.Tokens + used}
		}
		reserve += c.Tokens + used - fit
	}
}

// withText returns msgs with text appended to the first message, after a
// blank line, if it is a system message, or put first as a new system
// message; and what that adds to the request's cost. msgs is not
// modified.
func withText(msgs []agentmem.Message, text string, counter tokenizer.Counter) ([]agentmem.Message, int) {
	out := make([]agentmem.Message, 0, len(msgs)+1)
	if len(msgs) == 0 || msgs[0].Role != agentmem.RoleSystem {
		sys := agentmem.Message{Role: agentmem.RoleSystem, Content: agentmem.Text(text)}
		return append(append(out, sys), msgs...), agentmem.MessageTokens(counter, sys)
	}
	sys := msgs[0].Clone()
	if n := len(sys.Content); n > 0 && sys.Content[n-1].Type == agentmem.PartText {
		sys.Content[n-1].Text += "\n\n" + text
	} else {
		sys.Content = append(sys.Content, agentmem.TextPart(text))
	}
	used := agentmem.MessageTokens(counter, sys) - agentmem.MessageTokens(counter, msgs[0])
	return append(append(out, sys), msgs[1:]...), used
}
