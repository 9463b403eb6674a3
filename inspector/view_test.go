package inspector

import (
	"testing"

	"github.com/agentmem/agentmem"
)

// TestMessageViewToolResultImages: a tool_result part's images (as
// Anthropic's format renders a screenshot) are listed with its text.
func TestMessageViewToolResultImages(t *testing.T) {
	m := agentmem.Message{Role: agentmem.RoleUser, Content: agentmem.Content{{
		Type: agentmem.PartToolResult, ToolCallID: "c1", Text: "the page",
		Images: []agentmem.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}, {URL: "https://x.test/a.png"}},
	}}}
	v := newMessageView(m, 0)
	if len(v.Parts) != 1 || plain(v.Parts[0].Text) != "the page\n[image image/png, 3 bytes]\n[image https://x.test/a.png]" {
		t.Errorf("parts %+v", v.Parts)
	}
}
