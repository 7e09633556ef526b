package num

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestParseDouble(t *testing.T) {
	accept := map[string]float64{
		"1": 1, "-1": -1, "+1": 1, "01": 1, "1.5": 1.5, ".5": 0.5, "5.": 5, "-.5": -0.5,
		"1e3": 1000, "1E+3": 1000, "1e-3": 0.001, "2.5e-65": 2.5e-65,
		"inf": math.Inf(1), "+inf": math.Inf(1), "-inf": math.Inf(-1), "INF": math.Inf(1),
		"+Inf": math.Inf(1), "-Inf": math.Inf(-1), "infinity": math.Inf(1), "-INFINITY": math.Inf(-1),
		"0x10": 16, "0x1p3": 8, "0x1.8": 1.5, "0X1P-2": 0.25, "0x.8": 0.5, "-0x1.8p1": -3,
		"0e-400": 0, "5e-324": 5e-324, "4.9406564584124654e-324": 5e-324, "3e-324": 5e-324,
		"1.7976931348623157e308": math.MaxFloat64, "0": 0,
		"20190509102112650": 20190509102112650, "9007199254740993": 9007199254740992,
	}
	for in, want := range accept {
		got, ok := ParseDouble([]byte(in))
		if !ok || got != want {
			t.Errorf("ParseDouble(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if v, ok := ParseDouble([]byte("-0")); !ok || v != 0 || !math.Signbit(v) {
		t.Errorf("ParseDouble(-0) = %v, %v", v, ok)
	}
	reject := []string{
		"", " 1", "1 ", "\t1", "nan", "NaN", "-nan", "nan(1)", "1e400", "-1e400", "1e-400", "-1e-400",
		"2e-324", "0x1p-1075", "0x1p1024", "1_0", "0x1_0", "(1", "[1", "x", "1e", "1e+", "e3", ".",
		"+", "-", "0x", "0xg", "0x1p", "0x1.8p", "infin", "infinityy", "1.2.3", "1\x00", "++1", "1f",
	}
	for _, in := range reject {
		if v, ok := ParseDouble([]byte(in)); ok {
			t.Errorf("ParseDouble(%q) = %v, accepted; want refusal", in, v)
		}
	}
}

func TestParseRangeBound(t *testing.T) {
	type res struct {
		v  float64
		ex bool
	}
	accept := map[string]res{
		"1": {1, false}, "(1": {1, true}, "  1": {1, false}, "( 2": {2, true}, "": {0, false},
		"(": {0, true}, "1e400": {math.Inf(1), false}, "-1e400": {math.Inf(-1), false},
		"(1e-400": {0, true}, "0x10": {16, false}, "-inf": {math.Inf(-1), false},
		"+inf": {math.Inf(1), false}, "(inf": {math.Inf(1), true}, "1.5": {1.5, false},
		"1\x00junk": {1, false}, "\x00": {0, false}, "+1": {1, false}, "01": {1, false},
	}
	for in, want := range accept {
		v, ex, ok := ParseRangeBound([]byte(in))
		if !ok || v != want.v || ex != want.ex {
			t.Errorf("ParseRangeBound(%q) = %v %v %v; want %v %v", in, v, ex, ok, want.v, want.ex)
		}
	}
	reject := []string{"((1", "[2", "2 ", "nan", "(nan", " ", "( ", "x", "1x", "+", ".", "0x", "1e"}
	for _, in := range reject {
		if v, ex, ok := ParseRangeBound([]byte(in)); ok {
			t.Errorf("ParseRangeBound(%q) = %v %v, accepted; want refusal", in, v, ex)
		}
	}
}

func TestFormatScoreVerified(t *testing.T) {
	// docs/compat.md §3.3 and server/testdata/valkey/zset.jsonl.
	tenth := 0.1 // a variable, so 0.1+0.2 is computed in float64
	cases := []struct {
		v    float64
		want string
	}{
		{1.5, "1.5"}, {0.1, "0.1"}, {1e20, "1e+20"}, {1e-7, "1e-7"}, {0.000025, "0.000025"},
		{1e21, "1e+21"}, {1e17, "100000000000000000"}, {5e-324, "5e-324"},
		{tenth + 2*tenth, "0.30000000000000004"}, {123456789012345678, "123456789012345680"},
		{9007199254740993, "9007199254740992"}, {871697.3141899056, "8.716973141899057e+5"},
		{2.5e-65, "2.5e-65"}, {1467787000000, "1467787000000"}, {100000000, "100000000"},
		{20190509102112650, "20190509102112648"}, {-1.5, "-1.5"}, {0.2, "0.2"}, {7, "7"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"}, {0, "0"},
		{math.Copysign(0, -1), "-0"}, {1 << 62, "4611686018427387904"},
		{-(1 << 62), "-4611686018427387904"}, {1 << 63, "9223372036854776000"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {-math.MaxFloat64, "-1.7976931348623157e+308"},
		{math.SmallestNonzeroFloat64 * 3, "1.5e-323"}, {2.2250738585072014e-308, "2.2250738585072014e-308"},
		{0.5, "0.5"}, {0.001, "0.001"}, {1e-6, "0.000001"}, {123.456, "123.456"}, {1e-5, "0.00001"},
	}
	for _, c := range cases {
		if got := FormatScore(c.v); got != c.want {
			t.Errorf("FormatScore(%v) = %q; want %q", c.v, got, c.want)
		}
	}
}

// Grisu2 is not always shortest: these values print differently from
// Go's shortest formatting. Each expected text was checked against
// fpconv_dtoa itself (docs/compat.md §3.3).
func TestFormatScoreGrisuNotShortest(t *testing.T) {
	cases := []struct {
		bits  uint64
		want  string
		short string // Go's shortest digits, for the record
	}{
		{math.Float64bits(237.86796670082919), "237.86796670082919", "237.8679667008292"},
		{math.Float64bits(2069904697618869.7), "2069904697618869.7", "2069904697618869.8"},
		{0x4316c18b76a533cb, "1601313555696882.7", "1601313555696882.8"},
		{0x43044d00bc2df72e, "714270635835109.7", "714270635835109.8"},
		{0x4304fd4200e471f2, "738494932356670.3", "738494932356670.2"},
		{0x42d646cb03349d78, "97973238026869.87", "97973238026869.88"},
		{0x3ed13a7f3028d850, "4.1075952617511386e-6", "4.107595261751139e-06"},
		{0x42230472fd21ecf2, "40839511696.962784", "40839511696.96278"},
	}
	for _, c := range cases {
		v := math.Float64frombits(c.bits)
		got := FormatScore(v)
		if got != c.want {
			t.Errorf("FormatScore(%x) = %q; want %q", c.bits, got, c.want)
		}
		if s := strconv.FormatFloat(v, 'f', -1, 64); s == got {
			t.Errorf("%x: expected Grisu2 to differ from shortest %q", c.bits, s)
		}
		if back, _ := strconv.ParseFloat(got, 64); back != v {
			t.Errorf("%q does not read back as %x", got, c.bits)
		}
	}
}

// The computed power-of-ten cache must equal fpconv's table; a few entries
// of it (fpconv_powers.h), first, last and around 10^0.
func TestCachedPowers(t *testing.T) {
	want := map[int]diyFp{
		0:  {18054884314459144840, -1220},
		1:  {13451937075301367670, -1193},
		14: {9384396036005875287, -847},
		43: {15111572745182864684, -77},
		44: {11258999068426240000, -50},
		45: {16777216000000000000, -24},
		46: {12500000000000000000, 3},
		47: {9313225746154785156, 30},
		60: {12994262207056124023, 375},
		86: {12648080533535911531, 1066},
	}
	for i, w := range want {
		if cachedPowers[i] != w {
			t.Errorf("cachedPowers[%d] = %v; want %v", i, cachedPowers[i], w)
		}
	}
	for i, p := range cachedPowers {
		if p.f>>63 != 1 {
			t.Errorf("cachedPowers[%d] not normalized: %x", i, p.f)
		}
	}
}

// Every score FormatScore prints reads back as the same double.
func TestFormatScoreRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		var v float64
		switch i % 3 {
		case 0:
			v = math.Float64frombits(rng.Uint64())
		case 1:
			v = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		case 2:
			v = math.Float64frombits(rng.Uint64() & 0x800FFFFFFFFFFFFF) // subnormal
		}
		if math.IsNaN(v) {
			continue
		}
		s := FormatScore(v)
		back, ok := ParseDouble([]byte(s))
		if !ok || back != v || math.Signbit(back) != math.Signbit(v) {
			t.Fatalf("FormatScore(%x) = %q, reads back as %v %v", math.Float64bits(v), s, back, ok)
		}
		if len(s) > 25 {
			t.Fatalf("FormatScore(%x) = %q: longer than fpconv's 24 bytes and a sign", math.Float64bits(v), s)
		}
	}
}

func TestAppendScoreNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 64)
	n := testing.AllocsPerRun(100, func() {
		buf = AppendScore(buf[:0], 237.86796670082919)
		buf = AppendScore(buf[:0], 42)
	})
	if n != 0 {
		t.Errorf("AppendScore allocates %v times", n)
	}
}

func BenchmarkFormatScore(b *testing.B) {
	buf := make([]byte, 0, 64)
	vals := []float64{0.1, 1.5, 237.86796670082919, 1e-7, 123456.789}
	for i := 0; i < b.N; i++ {
		buf = AppendScore(buf[:0], vals[i%len(vals)])
	}
}
