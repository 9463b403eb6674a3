package snippets

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// A Link is a relative link of a Markdown file: a path (empty for the
// file itself) and an optional anchor.
type Link struct {
	Line   int
	Path   string
	Anchor string
}

var (
	linkRE      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode  = regexp.MustCompile("`[^`]*`")
	headingRE   = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchorR = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// Links returns the relative links of a Markdown file, outside code
// blocks and inline code: links to other files of the repository and to
// anchors. Links with a scheme (https:, mailto:) are left out.
func Links(src []byte) []Link {
	var links []Link
	eachProseLine(src, func(n int, line string) {
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, ":") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			links = append(links, Link{Line: n, Path: path, Anchor: anchor})
		}
	})
	return links
}

// Anchors returns the anchors a Markdown file defines, as GitHub renders
// it: one per heading (its text in lower case, punctuation removed, spaces
// as hyphens, "-1", "-2" ... after repeats) and one per HTML anchor.
func Anchors(src []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	eachProseLine(src, func(_ int, line string) {
		for _, m := range htmlAnchorR.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	})
	return anchors
}

// Slug is GitHub's anchor for a heading's text.
func Slug(heading string) string {
	heading = htmlAnchorR.ReplaceAllString(heading, "")
	heading = strings.ReplaceAll(heading, "</a>", "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// eachProseLine calls fn with each line of src outside fenced code
// blocks, numbered from 1.
func eachProseLine(src []byte, fn func(n int, line string)) {
	var fence string
	for i, line := range strings.Split(string(src), "\n") {
		m := fenceRE.FindStringSubmatch(strings.TrimRight(line, "\r"))
		switch {
		case fence == "" && m != nil:
			fence = m[2]
		case fence != "":
			if t := strings.TrimSpace(line); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
		default:
			fn(i+1, line)
		}
	}
}
