package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Sessions (docs/operations.md §2.2). A browser gets a session cookie on
// its first page (HttpOnly, SameSite=Strict, Path /dashboard/); the
// session holds the CSRF token every form carries and, once the operator
// has logged in, the password the dashboard's connections authenticate
// with. Sessions live in memory only: a restart logs everyone out.

const (
	cookieName = "emqd_dashboard"
	// sessionIdle is how long an unused session lives.
	sessionIdle = 12 * time.Hour
	// maxSessions bounds the sessions kept; the least recently used one
	// not logged in goes first, then the least recently used.
	maxSessions = 1024
)

type session struct {
	id       string
	csrf     string
	authed   bool   // logged in (or no password was required when it was made)
	password string // what the operator typed at login ("" without requirepass)
	flash    *flash
	seen     time.Time
}

// flash is a message shown once, on the page after an action.
type flash struct {
	Error bool
	Text  string
}

type sessions struct {
	mu sync.Mutex
	m  map[string]*session
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported systems
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// get returns the request's session, or nil.
func (ss *sessions) get(r *http.Request) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[ck.Value]
	if s == nil {
		return nil
	}
	now := time.Now()
	if now.Sub(s.seen) > sessionIdle {
		delete(ss.m, s.id)
		return nil
	}
	s.seen = now
	return s
}

// create makes a new session and sets its cookie on w.
func (ss *sessions) create(w http.ResponseWriter, r *http.Request) *session {
	s := &session{id: randomToken(), csrf: randomToken(), seen: time.Now()}
	ss.mu.Lock()
	if len(ss.m) >= maxSessions {
		ss.evictLocked()
	}
	ss.m[s.id] = s
	ss.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    s.id,
		Path:     Prefix,
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
	return s
}

// evictLocked drops the least recently used session, preferring one that
// is not logged in.
func (ss *sessions) evictLocked() {
	var victim *session
	for _, s := range ss.m {
		if victim == nil || (victim.authed && !s.authed) ||
			(victim.authed == s.authed && s.seen.Before(victim.seen)) {
			victim = s
		}
	}
	if victim != nil {
		delete(ss.m, victim.id)
	}
}

// drop forgets a session (logout, or a session replaced at login).
func (ss *sessions) drop(s *session) {
	ss.mu.Lock()
	delete(ss.m, s.id)
	ss.mu.Unlock()
}

// setFlash and takeFlash pass a message to the next page.
func (ss *sessions) setFlash(s *session, f flash) {
	ss.mu.Lock()
	s.flash = &f
	ss.mu.Unlock()
}

func (ss *sessions) takeFlash(s *session) *flash {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	f := s.flash
	s.flash = nil
	return f
}

// creds returns what the session's connections authenticate with.
func (ss *sessions) creds(s *session) (authed bool, password string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return s.authed, s.password
}

// logout marks a session as no longer logged in (a refused password).
func (ss *sessions) logout(s *session) {
	ss.mu.Lock()
	s.authed, s.password = false, ""
	ss.mu.Unlock()
}

// csrfOK checks a POST's token against the session's, in constant time,
// and, when the browser sent an Origin header, that it is this host (a
// second line behind the token and the SameSite cookie).
func csrfOK(r *http.Request, s *session) bool {
	if s == nil {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	tok := r.PostFormValue("csrf")
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.csrf)) == 1
}
