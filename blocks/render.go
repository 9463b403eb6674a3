package blocks

import (
	"fmt"
	"strings"
)

// Header introduces the blocks in the system prompt.
const Header = "Memory blocks (your memory, shown in every call; keep them current with the memory tools):"

// Render returns the text a context shows for blocks, appended to the
// system prompt. It is Header, then each block under its label, in the
// order given. A block shows its size against its limit, and whether it
// is read-only:
//
//	Memory blocks (your memory, shown in every call; keep them current with the memory tools):
//	<persona chars="25/5000" read_only="true">
//	I am a careful assistant.
//	</persona>
//	<human chars="22/5000">
//	Name: Alice. Likes tea.
//	</human>
//
// No blocks render as "".
func Render(bs []Block) string {
	if len(bs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(Header)
	for _, bl := range bs {
		fmt.Fprintf(&b, "\n<%s chars=\"%d/%d\"", bl.Label, bl.Chars(), bl.Limit)
		if bl.ReadOnly {
			b.WriteString(` read_only="true"`)
		}
		b.WriteString(">\n")
		if bl.Value != "" {
			b.WriteString(bl.Value)
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "</%s>", bl.Label)
	}
	return b.String()
}

// Shown returns the blocks a session's context shows, in order: its
// user's, then its own, each by label; a session's block hides its user's
// of the same label, as the tools edit the session's first.
func Shown(user, session []Block) []Block {
	own := make(map[string]bool, len(session))
	for _, b := range session {
		own[b.Label] = true
	}
	out := make([]Block, 0, len(user)+len(session))
	for _, b := range user {
		if !own[b.Label] {
			out = append(out, b)
		}
	}
	return append(out, session...)
}
