package num

import "testing"

func TestParseInt(t *testing.T) {
	ok := map[string]int64{"0": 0, "1": 1, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63}
	for s, v := range ok {
		if got, k := ParseInt([]byte(s)); !k || got != v {
			t.Errorf("%s: %d %v", s, got, k)
		}
	}
	for _, s := range []string{"", "+1", "01", "-0", " 1", "1 ", "1.0", "9223372036854775808", "-9223372036854775809", "-", "99999999999999999999"} {
		if _, k := ParseInt([]byte(s)); k {
			t.Errorf("%q accepted", s)
		}
	}
}
