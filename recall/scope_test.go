package recall_test

import (
	"errors"
	"maps"
	"testing"

	"github.com/agentmem/agentmem"
	"github.com/agentmem/agentmem/recall"
)

func TestParseScope(t *testing.T) {
	for in, want := range map[string]map[string]string{
		"":           nil,
		"session:s1": {recall.MetaSession: "s1"},
		"user:alice": {recall.MetaUser: "alice"},
		"agent:a:b":  {recall.MetaAgent: "a:b"},
		"team:x":     {"bad": ""},
		"user:":      {"bad": ""},
		"alice":      {"bad": ""},
		":x":         {"bad": ""},
	} {
		f, err := recall.ParseScope(in)
		if _, bad := want["bad"]; bad {
			var inv *agentmem.InvalidError
			if !errors.As(err, &inv) || inv.Field != "scope" {
				t.Errorf("ParseScope(%q): %v, want an invalid scope", in, err)
			}
			continue
		}
		if err != nil || !maps.Equal(f.Metadata, want) {
			t.Errorf("ParseScope(%q) = %v, %v", in, f.Metadata, err)
		}
	}
}
