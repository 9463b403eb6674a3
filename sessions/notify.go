package sessions

import "slices"

// NotifyWrites adds fn to the functions told of every write the service
// makes (appends, and the creation and deletion of sessions) until the
// returned function removes it. So the views that follow the store's log
// (package views) are woken at once rather than at their next poll. fn
// must not block.
func (s *Service) NotifyWrites(fn func()) (remove func()) {
	p := &fn
	s.updateNotify(func(list []*func()) []*func() { return append(list, p) })
	return func() {
		s.updateNotify(func(list []*func()) []*func() {
			return slices.DeleteFunc(list, func(q *func()) bool { return q == p })
		})
	}
}

// updateNotify replaces the list of NotifyWrites' functions by edit's
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

// wake tells the functions of NotifyWrites that the service wrote.
func (s *Service) wake() {
	if list := s.notify.Load(); list != nil {
		for _, fn := range *list {
			(*fn)()
		}
	}
}
