package sessions

import "slices"

// NotifyAppends adds fn to the functions told of every append the
// service stores (a follower of the store's log woken at once, such as
// the automatic compaction of package views/autocompact) until the
// returned function removes it. fn must not block.
func (s *Service) NotifyAppends(fn func()) (remove func()) {
	p := &fn
	s.updateNotify(func(list []*func()) []*func() { return append(list, p) })
	return func() {
		s.updateNotify(func(list []*func()) []*func() {
			return slices.DeleteFunc(list, func(q *func()) bool { return q == p })
		})
	}
}

// updateNotify replaces the list of NotifyAppends' functions by edit's
// change of a copy of it.
func (s *Service) updateNotify(edit func([]*func()) []*func()) {
	for {
		old := s.notify.Load()
		var list []*func()
		if old != nil {
			list = slices.Clone(*old)
		}
		list = edit(list)
		if s.notify.CompareAndSwap(old, &list) {
			return
		}
	}
}

// wake tells the functions of NotifyAppends that a session was appended
// to.
func (s *Service) wake() {
	if list := s.notify.Load(); list != nil {
		for _, fn := range *list {
			(*fn)()
		}
	}
}
