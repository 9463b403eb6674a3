package cli

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// progressThrottle is how often a progress bar is redrawn at most.
const progressThrottle = 100 * time.Millisecond

// Progress holds the --progress and --no-progress flags of a command that
// shows a progress bar on standard error.
type Progress struct{ always, never bool }

// AddFlags adds --progress and --no-progress to fl.
func (p *Progress) AddFlags(fl *pflag.FlagSet) {
	fl.BoolVar(&p.always, "progress", false, "always show the progress bar on standard error")
	fl.BoolVar(&p.never, "no-progress", false, "never show the progress bar")
}

// Check refuses --progress with --no-progress.
func (p Progress) Check() error {
	if p.always && p.never {
		return Usagef("--progress and --no-progress contradict each other")
	}
	return nil
}

// Show reports whether to draw a progress bar: always with --progress and
// never with --no-progress. Otherwise it draws one when auto says so:
// standard error is a terminal and the work is large.
func (p Progress) Show(auto bool) bool {
	return p.always || !p.never && auto
}

// NewBar returns a progress bar of max units (-1: unknown) that draws on
// w, labelled description. It clears itself when finished and has no
// spinner goroutine: it redraws as it advances. Bytes counts in bytes;
// otherwise the units are named unit.
func NewBar(w io.Writer, max int64, description, unit string) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(progressThrottle),
		progressbar.OptionSetSpinnerChangeInterval(0),
	}
	if unit == "" {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionSetItsString(unit))
	}
	return progressbar.NewOptions64(max, opts...)
}

// ProgressSink advances a progress bar by the bytes written to it. It
// never fails: a bar that cannot draw (an empty input, one that grew
// while read) must not fail the work.
type ProgressSink struct{ Bar *progressbar.ProgressBar }

// Write advances the bar by len(b).
func (p ProgressSink) Write(b []byte) (int, error) {
	_ = p.Bar.Add(len(b))
	return len(b), nil
}

// IsTerminal reports whether f (an io.Reader or io.Writer) is a terminal.
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
