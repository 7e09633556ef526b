package server

import (
	"os"
	"strings"
	"testing"
)

// TestDirectivesTableComplete: docs/operations.md §3.1 lists every
// directive of the config table (by its name; aliases named in its row),
// each with a known status, and names no directive the table lacks, so
// nothing is accepted and silently ignored without being listed.
func TestDirectivesTableComplete(t *testing.T) {
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "### 3.1 Every directive")
	j := strings.Index(doc, "\n## 4.")
	if i < 0 || j < i {
		t.Fatal("docs/operations.md has no §3.1 before §4")
	}
	rows := map[string]string{} // directive -> the rest of its row
	for _, line := range strings.Split(doc[i:j], "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		name := strings.Trim(cells[0], "| `")
		if _, dup := rows[name]; dup {
			t.Errorf("%s listed twice", name)
		}
		if len(cells) != 3 {
			t.Errorf("%s: %d cells", name, len(cells))
			continue
		}
		switch cells[1] {
		case "enforced", "enforced, values refused", "enforced in part",
			"stored without effect", "stored without effect, values refused":
		default:
			t.Errorf("%s: unknown status %q", name, cells[1])
		}
		rows[name] = cells[2]
	}
	known := map[string]bool{}
	for _, p := range paramTable() {
		known[p.name] = true
		row, ok := rows[p.name]
		if !ok {
			t.Errorf("directive %s is missing from docs/operations.md §3.1", p.name)
			continue
		}
		for _, a := range p.aliases {
			if !strings.Contains(row, "`"+a+"`") {
				t.Errorf("%s: its alias %s is not named in its row", p.name, a)
			}
		}
	}
	for name := range rows {
		if !known[name] {
			t.Errorf("docs/operations.md §3.1 lists %s, which emqd does not accept", name)
		}
	}
}
