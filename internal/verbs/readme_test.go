package verbs_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/emqd/emqd/internal/cmdmeta"
	"github.com/emqd/emqd/internal/verbs"
)

// TestReadmeVerbTable checks the "## Job verbs" reference table of the
// README against the verb table (cmdmeta.Verbs, internal/cmdmeta/emq.go):
// the same verbs (a container's subcommands, not the container), with the
// same arities, each row citing its docs/verbs.md section; and the verbs'
// Commands() are the table's.
func TestReadmeVerbTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n## Job verbs\n")
	if i < 0 {
		t.Fatal("README has no \"## Job verbs\" section")
	}
	section := text[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	table := map[string]int{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `EMQ.") {
			continue
		}
		cells := splitRow(line)
		if len(cells) < 3 {
			t.Fatalf("short row %q", line)
		}
		words := strings.Fields(strings.Trim(cells[0], "`"))
		name := strings.ToLower(words[0])
		if len(words) > 1 {
			name += "|" + strings.ToLower(words[1])
		}
		if !strings.HasPrefix(cells[len(cells)-1], "§") {
			t.Errorf("%s: last cell %q is not a docs/verbs.md section", name, cells[len(cells)-1])
		}
		arity, err := strconv.Atoi(cells[1])
		if err != nil {
			t.Fatalf("arity of %s: %q", name, cells[1])
		}
		if _, dup := table[name]; dup {
			t.Fatalf("%s listed twice", name)
		}
		table[name] = arity
	}
	want := map[string]int{}
	for _, c := range cmdmeta.Verbs() {
		if parent, _, sub := strings.Cut(c.Name, "|"); sub {
			delete(want, parent) // a container is listed by its subcommands
		}
		want[c.Name] = c.Arity
	}
	specs := map[string]int{}
	for _, c := range verbs.New(verbs.Config{}).Commands() {
		specs[c.Name] = c.Arity
		for _, s := range c.Subcommands {
			specs[s.Name] = s.Arity
		}
	}
	for _, c := range cmdmeta.Verbs() {
		if a, ok := specs[c.Name]; !ok || a != c.Arity || len(specs) != len(cmdmeta.Verbs()) {
			t.Errorf("%s: Commands() gives arity %d (present %v, %d specs), the verb table %d (%d entries)", c.Name, a, ok, len(specs), c.Arity, len(cmdmeta.Verbs()))
		}
	}
	for name, arity := range want {
		got, ok := table[name]
		switch {
		case !ok:
			t.Errorf("%s is missing from the README table", name)
		case got != arity:
			t.Errorf("%s: README arity %d, command table %d", name, got, arity)
		}
	}
	for name := range table {
		if _, ok := want[name]; !ok {
			t.Errorf("README lists %s, which is not a command", name)
		}
	}
	if len(table) != len(want) || len(want) < 20 {
		t.Errorf("README table has %d verbs, the command table %d (at least 20)", len(table), len(want))
	}
}

// splitRow splits a markdown table row on unescaped pipes.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == '|' {
			cur.WriteByte('|')
			i++
			continue
		}
		if line[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(line[i])
	}
	return append(cells, strings.TrimSpace(cur.String()))
}
