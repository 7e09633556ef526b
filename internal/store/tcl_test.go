package store

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// Valkey's own Tcl tests (tests/unit/type/zset.tcl, hash.tcl, string.tcl,
// incr.tcl, tests/unit/expire.tcl) transcribed case by case, each under its
// Tcl name, so that /work's checklist can point at them. A case is a list
// of steps, one per line:
//
//	CMD arg arg => expected
//
// run in order on one store (state carries over, as in the Tcl file). The
// reply is rendered as the Tcl client would see it (tclRender): integers
// and bulks as text, nil as the empty string, arrays as Tcl lists (nested
// or empty elements in braces), an error as "-" and its text. An expected
// value with '*' is a glob (Tcl's string match, '*' only); a step without
// "=>" runs and must not answer an error. Arguments split on spaces; ""
// is the empty argument and {a b} one argument with a space. Directives:
//
//	@zset E V   zset-max-listpack-entries/value (CONFIG SET in the Tcl)
//	@hash E V   hash-max-listpack-entries/value
//	@resp N     protocol of the following steps
//	@advance MS moves the store clock (Tcl's "after")
//	@expired N  expired_keys is N (INFO stats)
//
// An argument $S or $MS, optionally +N or -N, is the store clock in seconds
// or milliseconds (Tcl's clock seconds / clock milliseconds).
type tclCase struct {
	name  string
	steps string
}

// runTcl runs cases in order on store s.
func runTcl(t *testing.T, s *Store, cases []tclCase) {
	t.Helper()
	proto := 2
	for _, c := range cases {
		for _, line := range strings.Split(c.steps, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			cmd, want, check := line, "", false
			if i := strings.Index(line, " => "); i >= 0 {
				cmd, want, check = line[:i], line[i+4:], true
			} else if strings.HasSuffix(line, " =>") {
				cmd, check = strings.TrimSuffix(line, " =>"), true
			}
			args := tclArgs(cmd)
			switch args[0] {
			case "@zset", "@hash":
				l := s.limits
				e, _ := strconv.ParseInt(args[1], 10, 64)
				v, _ := strconv.ParseInt(args[2], 10, 64)
				if args[0] == "@zset" {
					l.ZSetEntries, l.ZSetValue = e, v
				} else {
					l.HashEntries, l.HashValue = e, v
				}
				s.SetLimits(l)
				continue
			case "@resp":
				proto, _ = strconv.Atoi(args[1])
				continue
			case "@advance":
				ms, _ := strconv.ParseInt(args[1], 10, 64)
				s.SetNow(s.Now() + ms)
				continue
			case "@expired":
				if n, _ := strconv.ParseInt(args[1], 10, 64); s.ExpiredKeys != n {
					t.Errorf("%s: expired_keys %d, want %d", c.name, s.ExpiredKeys, n)
				}
				continue
			}
			for i, a := range args {
				args[i] = tclClock(s, a)
			}
			if strings.HasPrefix(want, "$") {
				want = tclClock(s, want)
			}
			raw := run(t, s, proto, args...)
			got := tclRender(t, raw)
			if !check {
				if strings.HasPrefix(raw, "-") {
					t.Errorf("%s: %s: unexpected error %q", c.name, cmd, raw)
				}
				continue
			}
			if !tclMatch(want, got) {
				t.Errorf("%s: %s: got %q (raw %q), want %q", c.name, cmd, got, raw, want)
			}
		}
	}
}

// tclClock evaluates $S[+-N] and $MS[+-N] on the store clock (harnessNowMs
// when unset); any other argument is returned as it is.
func tclClock(s *Store, a string) string {
	now := s.Now()
	if now == 0 {
		now = harnessNowMs
	}
	var base int64
	switch {
	case strings.HasPrefix(a, "$MS"):
		base, a = now, a[3:]
	case strings.HasPrefix(a, "$S"):
		base, a = now/1000, a[2:]
	default:
		return a
	}
	if a != "" {
		n, _ := strconv.ParseInt(a, 10, 64) // "+15" and "-100" parse
		base += n
	}
	return strconv.FormatInt(base, 10)
}

// tclArgs splits a step's command: spaces separate, "" is an empty
// argument, {a b} one argument.
func tclArgs(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		switch {
		case strings.HasPrefix(s, `""`):
			out = append(out, "")
			s = s[2:]
		case s[0] == '{':
			i := strings.IndexByte(s, '}')
			out = append(out, s[1:i])
			s = s[i+1:]
		default:
			i := strings.IndexByte(s, ' ')
			if i < 0 {
				i = len(s)
			}
			out = append(out, s[:i])
			s = s[i:]
		}
	}
	return out
}

// tclMatch is Tcl's string match with '*' as the only special character,
// or equality when pattern has none.
func tclMatch(pattern, s string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == s
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// tclRender renders a whole reply as the Tcl client's value.
func tclRender(t *testing.T, raw string) string {
	t.Helper()
	v, rest := tclValue(t, raw, true)
	if rest != "" {
		t.Fatalf("trailing bytes after reply %q", raw)
	}
	return v
}

// tclValue renders the first reply of raw; top says whether it is the
// whole reply (an element is braced when empty, spaced or a list).
func tclValue(t *testing.T, raw string, top bool) (string, string) {
	t.Helper()
	i := strings.Index(raw, "\r\n")
	line, rest := raw[1:i], raw[i+2:]
	elem := func(s string) string {
		if !top && (s == "" || strings.ContainsAny(s, " \t\n")) {
			return "{" + s + "}"
		}
		return s
	}
	switch raw[0] {
	case '+', ':':
		return elem(line), rest
	case '-':
		return "-" + line, rest
	case '_':
		return elem(""), rest
	case '#':
		if line == "t" {
			return "1", rest
		}
		return "0", rest
	case ',':
		f, err := strconv.ParseFloat(line, 64)
		if err != nil {
			return elem(line), rest
		}
		if math.IsInf(f, 0) {
			return elem(line), rest
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return elem(s), rest
	case '$':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return elem(""), rest
		}
		return elem(rest[:n]), rest[n+2:]
	case '*', '%', '~':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return elem(""), rest
		}
		if raw[0] == '%' {
			n *= 2
		}
		items := make([]string, n)
		for k := range items {
			items[k], rest = tclValue(t, rest, false)
		}
		s := strings.Join(items, " ")
		if !top {
			s = "{" + s + "}"
		}
		return s, rest
	}
	t.Fatalf("unknown reply %q", raw)
	return "", ""
}

func TestTclRender(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{":3\r\n", "3"}, {"$0\r\n\r\n", ""}, {"$-1\r\n", ""}, {"*0\r\n", ""},
		{"*2\r\n$1\r\na\r\n$-1\r\n", "a {}"}, {"*2\r\n*2\r\n$1\r\na\r\n,1\r\n*0\r\n", "{a 1.0} {}"},
		{"-ERR x\r\n", "-ERR x"}, {"*1\r\n$3\r\na b\r\n", "{a b}"},
	} {
		if got := tclRender(t, c.raw); got != c.want {
			t.Errorf("%q: %q, want %q", c.raw, got, c.want)
		}
	}
	for _, c := range []struct {
		p, s string
		ok   bool
	}{{"*not*float*", "ERR value is not a valid float", true}, {"ERR*", "WRONGTYPE", false}, {"a", "a", true}, {"*x", "yxz", false}} {
		if tclMatch(c.p, c.s) != c.ok {
			t.Errorf("match %q %q", c.p, c.s)
		}
	}
}
