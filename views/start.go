package views

import (
	"context"
	"sync"

	"github.com/agentmem/agentmem/store"
)

// Runner is a view that follows a feed until its context ends: a
// Follower, or a type that embeds one.
type Runner interface {
	Run(ctx context.Context) error
	Notify()
}

// Notifier tells of writes as they are made, so that a view need not
// wait for its next poll: a sessions.Service is one (NotifyWrites).
type Notifier interface {
	NotifyWrites(fn func()) (remove func())
}

// Start runs r in the background until the returned stop is called;
// when n is not nil, n's writes wake r. Stop waits for Run to return (the
// batch being applied is finished or cut short by its context) and may
// be called more than once. Run's failures go to the view's
// Options.OnError, not to the caller.
func Start(r Runner, n Notifier) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	unwatch := func() {}
	if n != nil {
		unwatch = n.NotifyWrites(r.Notify)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unwatch()
			cancel()
			<-done
		})
	}
}

// StartFor runs the view that newView makes to follow feed, or the change
// feed of st when feed is nil, as Start runs r with n. Without a feed it
// makes none: it returns the zero V and a stop that does nothing.
func StartFor[V Runner](feed store.Feed, st *store.Store, n Notifier, newView func(store.Feed) V) (V, func()) {
	feed, ok := FeedOf(feed, st)
	if !ok {
		var none V
		return none, func() {}
	}
	v := newView(feed)
	return v, Start(v, n)
}

// FeedOf returns feed, or when it is nil the change feed of st if st has
// one: the feed a view of st follows.
func FeedOf(feed store.Feed, st *store.Store) (store.Feed, bool) {
	if feed != nil {
		return feed, true
	}
	return st.Feed()
}
