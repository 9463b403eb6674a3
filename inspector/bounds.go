package inspector

// Bounds of what one page shows, so that a page's cost and size follow
// what it shows rather than what the log holds. One tool result may be
// megabytes of text, and one word of it (a base64 blob, a minified file)
// tens of thousands of characters. A session may have thousands of steps.
const (
	// MaxShownText bounds the text one message shows: its parts, the
	// arguments of its calls and its data, together; and the text of a
	// recall hit. The rest is left out, with a mark saying how much. A
	// page cuts a text before it does anything else with it (indents its
	// JSON, highlights it, escapes it, lets the browser wrap it).
	MaxShownText = 8 << 10
	// MaxShownWord bounds a word a page shows. A run of text without white
	// space longer than this shows its first MaxShownWord bytes and a mark
	// saying how many more it has.
	MaxShownWord = 200
	// MaxChartBytes bounds the text the chart of context sizes on a
	// session's first page tokenizes, beyond what the page's entries have. A
	// log with more gets a note instead of the chart.
	MaxChartBytes = 4 << 20
	// ContextPage is the number of messages one page of "what the model
	// saw" shows (?page=N); the page links to the others.
	ContextPage = 100
	// ContextLogPage is the number of log entries one page of "what the
	// model saw" lists, the newest first (?before=SEQ lists older ones).
	// A page of the log ends earlier, as the timeline's does, once its
	// steps hold MaxTimelineBytes of text.
	ContextLogPage = 200
)
