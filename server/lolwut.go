package server

import (
	"strconv"
	"strings"

	"github.com/emqd/emqd/num"
	"github.com/emqd/emqd/store"
)

// valkeyVersion is the Valkey release whose behaviour emqd matches: HELLO's
// version, LOLWUT's line, dump.rdb's valkey-ver (docs/compat.md §4).
const valkeyVersion = "8.0.1"

// cmdLolwut is LOLWUT [VERSION <n> [args ...]], as Valkey 8.0.1's
// lolwutCommand: VERSION must be an integer (and the arguments VERSION 5
// and 6 take: Valkey's integer error for one that is not), and the reply
// is the verbatim line "Redis ver. 8.0.1\n", Valkey 8.0.1's own text. For
// VERSION 5 and 6 Valkey draws random computer art (different at every
// call); emqd answers the line (docs/compat.md §2).
func cmdLolwut(c *client, x *store.Ctx) {
	argv := x.Argv
	if len(argv) >= 3 && strings.EqualFold(string(argv[1]), "version") {
		ver, ok := num.ParseInt(argv[2])
		if !ok {
			x.W.Error(store.ErrNotInteger)
			return
		}
		v := strconv.FormatUint(uint64(uint32(ver)), 10) + ".0.0"
		if v[1] == '.' && (v[0] == '5' || v[0] == '6') {
			// lolwut5Command reads up to three integer arguments, lolwut6Command
			// up to two, before drawing.
			n := 3
			if v[0] == '6' {
				n = 2
			}
			for _, a := range argv[3:min(len(argv), 3+n)] {
				if _, ok := num.ParseInt(a); !ok {
					x.W.Error(store.ErrNotInteger)
					return
				}
			}
		}
	}
	x.W.Verbatim("Redis ver. " + valkeyVersion + "\n")
}
