package server

// storeObserver is the server's store.Observer, the one way the store
// reaches up (docs/architecture.md §1.2), fixed when the store is built
// (embed.go). It forwards the keyspace's events, under the store lock, to
// the client-side caching table while one is installed (s.trk), to the
// blocked clients and the schedule timer (onKeyReady, onDBReady), and the
// reads of a tracking client's EMQ verb to that client (s.readNote).
type storeObserver struct{ s *Server }

func (o storeObserver) KeyChanged(db int, key string, byCommand bool) {
	s := o.s
	if s.trk != nil {
		s.trk.KeyChanged(key, byCommand)
	}
	s.onKeyReady(db, key)
}

func (o storeObserver) Flushed(db int) {
	s := o.s
	if s.trk != nil {
		s.trk.Flushed()
	}
	// Every key of the database changed (went): a waiter on a key that no
	// write will touch again is retried now (EMQ.WAIT on a job row answers
	// EMQSTALE job gone, docs/verbs.md §4.23).
	for i := 0; i < s.store.NumDBs(); i++ {
		if db < 0 || i == db {
			s.onDBReady(i)
		}
	}
}

func (o storeObserver) Swapped(a, b int) {
	o.s.onDBReady(a)
	o.s.onDBReady(b)
}

func (o storeObserver) KeyRead(key string) {
	if f := o.s.readNote; f != nil {
		f(key)
	}
}

func (o storeObserver) BeforeUnlock() {
	if t := o.s.trk; t != nil {
		t.flushBcast()
	}
}
