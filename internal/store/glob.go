package store

// GlobMatch reports whether s matches the glob pattern, with the semantics of
// Valkey's stringmatchlen (util.c), used by KEYS, SCAN/HSCAN/ZSCAN MATCH and
// (nocase) CONFIG GET (docs/compat.md §1.4, KEYS row):
//
//   - `*` matches any run of bytes (including none), `?` exactly one byte;
//   - `[abc]` one of the listed bytes, `[^abc]` any other byte, `[a-z]` a range
//     (a reversed range `[z-a]` is swapped; bounds compare as C's signed
//     char, so bytes >= 0x80 sort below 0x00), `\x` inside a class is x;
//   - an unterminated `[` runs to the end of the pattern (`a[c` matches "ac");
//     `[]]` never matches (the class ends at the first `]`, empty); `[!a]` is
//     the bytes `!` and `a` (no `!` negation);
//   - `\x` outside a class matches x literally (a trailing `\` matches `\`);
//   - nocase folds ASCII A-Z only (C locale tolower);
//   - a pattern nesting more than 1000 `*` groups deep never matches
//     (Valkey's protection against abusive patterns).
//
// Unlike path.Match, `/` is an ordinary byte.
func GlobMatch(pattern, s string, nocase bool) bool {
	skip := false
	return globMatch(pattern, s, nocase, &skip, 0)
}

// globAt returns p[i], or 0 past the end (C strings are NUL-terminated; Valkey
// peeks one byte past the pattern in a few places).
func globAt(p string, i int) byte {
	if i < len(p) {
		return p[i]
	}
	return 0
}

func globLower(c int) int {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// globMatch is stringmatchlen_impl with pattern and string as index windows:
// p[pi:] is the pattern left, s[si:] the string left.
func globMatch(p, s string, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	pi, si := 0, 0
	plen, slen := len(p), len(s)
	for plen > 0 && slen > 0 {
		switch p[pi] {
		case '*':
			for plen > 0 && globAt(p, pi+1) == '*' {
				pi++
				plen--
			}
			if plen == 1 {
				return true
			}
			for slen > 0 {
				if globMatch(p[pi+1:pi+plen], s[si:si+slen], nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				si++
				slen--
			}
			// No match for the rest of the pattern from anywhere in the rest
			// of the string: earlier stars cannot help either.
			*skipLonger = true
			return false
		case '?':
			si++
			slen--
		case '[':
			pi++
			plen--
			not := globAt(p, pi) == '^'
			if not {
				pi++
				plen--
			}
			match := false
			sc := s[si]
			for {
				pc := globAt(p, pi)
				if pc == '\\' && plen >= 2 {
					pi++
					plen--
					if p[pi] == sc {
						match = true
					}
				} else if pc == ']' && plen > 0 {
					break
				} else if plen == 0 {
					pi--
					plen++
					break
				} else if plen >= 3 && p[pi+1] == '-' {
					start := int(int8(p[pi]))
					end := int(int8(p[pi+2]))
					c := int(int8(sc))
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = globLower(start), globLower(end), globLower(c)
					}
					pi += 2
					plen -= 2
					if c >= start && c <= end {
						match = true
					}
				} else if !nocase {
					if pc == sc {
						match = true
					}
				} else if globLower(int(pc)) == globLower(int(sc)) {
					match = true
				}
				pi++
				plen--
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			si++
			slen--
		case '\\':
			if plen >= 2 {
				pi++
				plen--
			}
			fallthrough
		default:
			if nocase {
				if globLower(int(p[pi])) != globLower(int(s[si])) {
					return false
				}
			} else if p[pi] != s[si] {
				return false
			}
			si++
			slen--
		}
		pi++
		plen--
		if slen == 0 {
			for globAt(p, pi) == '*' && plen > 0 {
				pi++
				plen--
			}
			break
		}
	}
	return plen == 0 && slen == 0
}
