package verbs

import (
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/plan"
)

// Helpers of the judgement table tests (one file per family: token_test.go,
// claim_test.go, ...): the cases of docs/verbs.md §3
// and §5. Plans are compared as the Valkey commands they render to.

const (
	tRun  = "1111111111111111111111111111111111111111"
	tOld  = "0000000000000000000000000000000000000000"
	tNow  = int64(1_700_000_000_000)
	tID   = "JOB00000000001"
	tID2  = "JOB00000000002"
	tID3  = "JOB00000000003"
	tErr  = "boom"
	tRowQ = "emq:{q}:job:"
)

var tk = NewKeys("q")

// render gives p's ops as "CMD key args..." lines.
func render(p *plan.Plan) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, a := range p.Argvs() {
		parts := make([]string, len(a))
		for i, b := range a {
			parts[i] = string(b)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func eqLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("plan:\n got %q\nwant %q", got, want)
	}
}

// fieldOf is a present field holding s.
func fieldOf(s string) rowField { return rowField{Val: []byte(s), Present: true} }

// live is the row docs/verbs.md §4.6 starts from: an active row whose attempts is 1 and that has
// no failures field, leased by the current run.
func live() jobRow {
	return jobRow{Kind: keyOK, State: fieldOf("active"), Attempts: fieldOf("1"), LeaseEpoch: fieldOf(tRun), Payload: fieldOf("p")}
}

func targs(token string) *tokenArgs {
	return &tokenArgs{K: tk, ID: tID, RowKey: tk.Row(tID), Token: []byte(token)}
}
