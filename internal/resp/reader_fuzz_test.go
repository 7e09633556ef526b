package resp

import (
	"fmt"
	"testing"
)

// FuzzReader checks that the reader never panics, that any split of the
// input into two reads gives the same commands and error as one read, and
// that reading one command per Parse gives the same as all at once. The
// split and one-by-one readers release their argvs after every Parse
// (Recycle, as the server does after a batch that kept nothing), once the
// commands are rendered: a frame still being received must survive it.
// Inputs over MaxInline are skipped: Valkey's size limits depend on read
// boundaries by design.
func FuzzReader(f *testing.F) {
	// The seed corpus is in testdata/fuzz/FuzzReader.
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		if len(data) > MaxInline {
			return
		}
		var whole Reader
		whole.Write(data)
		cmds, err := whole.Parse(0, false)
		want := fmt.Sprint(render(cmds), errText(err))

		c := 0
		if len(data) > 0 {
			c = int(cut) % (len(data) + 1)
		}
		var two Reader
		two.Write(data[:c])
		cmds, err1 := two.Parse(0, false)
		got := render(cmds)
		two.Recycle()
		if err1 == nil {
			two.Write(data[c:])
			cmds, err1 = two.Parse(0, false)
			got = append(got, render(cmds)...)
		}
		if g := fmt.Sprint(got, errText(err1)); g != want {
			t.Fatalf("cut %d: got %s want %s", c, g, want)
		}

		var one Reader
		one.Write(data)
		var seq []string
		var err2 error
		for {
			cmds, err2 = one.Parse(1, false)
			seq = append(seq, render(cmds)...)
			one.Recycle()
			if err2 != nil || len(cmds) == 0 {
				break
			}
		}
		if g := fmt.Sprint(seq, errText(err2)); g != want {
			t.Fatalf("one by one: got %s want %s", g, want)
		}
	})
}
