package inspector

import (
	"fmt"
	"html/template"
)

// pageNames are the pages, each a template file that defines "content".
var pageNames = []string{"sessions", "session", "context", "facts", "facthistory", "recall", "blocks", "error"}

// parseTemplates parses every page with the shared layout and partials.
func parseTemplates() (map[string]*template.Template, error) {
	base, err := template.New("base").ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("inspector: templates: %w", err)
	}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("inspector: templates: %w", err)
		}
		if pages[name], err = t.ParseFS(templateFS, "templates/"+name+".html"); err != nil {
			return nil, fmt.Errorf("inspector: template %s: %w", name, err)
		}
	}
	return pages, nil
}
