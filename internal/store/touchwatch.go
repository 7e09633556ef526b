package store

// touchWatcher is one WatchTouches registration.
type touchWatcher struct{ fn func(db int, key string) }

// WatchTouches registers fn to be called under the lock exactly as the Feed's Touched
// is: with every key a command or the store's expiry changes, and with key
// "" when database db (-1: every one) is emptied or swapped. It returns
// the function that removes fn (call it under the lock). A background save
// uses it to learn which keys changed while it captured the keyspace in
// chunks (docs/durability.md §9.2). Call under the lock.
func (s *Store) WatchTouches(fn func(db int, key string)) (stop func()) {
	w := &touchWatcher{fn}
	s.touchWatchers = append(s.touchWatchers, w)
	return func() {
		for i, x := range s.touchWatchers {
			if x == w {
				s.touchWatchers = append(s.touchWatchers[:i:i], s.touchWatchers[i+1:]...)
				return
			}
		}
	}
}

// notifyTouch calls the Feed's Touched (a store.Toucher) and every
// WatchTouches function.
func (s *Store) notifyTouch(db int, key string) {
	if s.toucher != nil {
		s.toucher.Touched(db, key)
	}
	for _, w := range s.touchWatchers {
		w.fn(db, key)
	}
}
