// Command gencmd writes internal/cmdmeta/valkey_gen.go, the metadata of
// every Valkey command and subcommand, from the command JSON files of
// Valkey 8.0.1 (src/commands/*.json; the reference folder's commands/).
//
//	go run ./internal/cmdmeta/gencmd -in $EMQD_VALKEY_DIR/commands -out internal/cmdmeta/valkey_gen.go
//
// It keeps what emqd answers from (arity, flags, ACL categories, key specs,
// tips, get-keys function, doc fields, arguments) and drops the rest (the
// reply schemas, the C function names). The field rules follow Valkey's
// utils/generate-command-code.py: names lower case, tokens upper case,
// display texts lower case, a subcommand takes its container's group, an
// empty string is absent. docs/architecture.md ("Command metadata").
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/emqd/emqd/internal/cmdmeta"
)

func main() {
	in := flag.String("in", "", "the folder of Valkey's command JSON files (src/commands)")
	out := flag.String("out", "valkey_gen.go", "the Go file to write")
	version := flag.String("version", "8.0.1", "the Valkey version the files are from (for the header)")
	flag.Parse()
	if *in == "" || *in == "/commands" {
		fmt.Fprintln(os.Stderr, "gencmd: -in is required (set EMQD_VALKEY_DIR for go generate)")
		os.Exit(2)
	}
	src, err := Generate(*in, *version)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencmd:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gencmd:", err)
		os.Exit(1)
	}
}

type jsonKeySpec struct {
	Notes       string                     `json:"notes"`
	Flags       []string                   `json:"flags"`
	BeginSearch map[string]json.RawMessage `json:"begin_search"`
	FindKeys    map[string]json.RawMessage `json:"find_keys"`
}

type jsonArg struct {
	Name            string    `json:"name"`
	Type            string    `json:"type"`
	KeySpecIndex    *int      `json:"key_spec_index"`
	Token           string    `json:"token"`
	Summary         string    `json:"summary"`
	Since           string    `json:"since"`
	DeprecatedSince string    `json:"deprecated_since"`
	Display         string    `json:"display"`
	Optional        truthy    `json:"optional"`
	Multiple        truthy    `json:"multiple"`
	MultipleToken   truthy    `json:"multiple_token"`
	Arguments       []jsonArg `json:"arguments"`
}

// truthy is a JSON value read as Python's truth test, as Valkey's generator
// reads it (client-capa.json says "multiple": "true").
type truthy bool

func (t *truthy) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case bool:
		*t = truthy(x)
	case string:
		*t = x != ""
	case float64:
		*t = x != 0
	case nil:
		*t = false
	default:
		*t = true
	}
	return nil
}

type jsonCommand struct {
	Summary         string        `json:"summary"`
	Complexity      string        `json:"complexity"`
	Group           string        `json:"group"`
	Since           string        `json:"since"`
	Arity           int           `json:"arity"`
	Container       string        `json:"container"`
	GetKeysFunction string        `json:"get_keys_function"`
	History         [][2]string   `json:"history"`
	DeprecatedSince string        `json:"deprecated_since"`
	ReplacedBy      string        `json:"replaced_by"`
	DocFlags        []string      `json:"doc_flags"`
	CommandFlags    []string      `json:"command_flags"`
	ACLCategories   []string      `json:"acl_categories"`
	CommandTips     []string      `json:"command_tips"`
	KeySpecs        []jsonKeySpec `json:"key_specs"`
	Arguments       []jsonArg     `json:"arguments"`
}

// groupNames are COMMAND DOCS's group names (Valkey's COMMAND_GROUP_STR).
var groupNames = map[string]string{
	"generic": "generic", "string": "string", "list": "list", "set": "set", "sorted_set": "sorted-set",
	"hash": "hash", "pubsub": "pubsub", "transactions": "transactions", "connection": "connection",
	"server": "server", "scripting": "scripting", "hyperloglog": "hyperloglog", "cluster": "cluster",
	"sentinel": "sentinel", "geo": "geo", "stream": "stream", "bitmap": "bitmap",
}

// Generate reads every *.json of dir and returns the gofmt'ed source of
// valkey_gen.go. It fails on a file that is not valid JSON, an unknown flag,
// category, group or key-spec shape, and a subcommand without its container.
func Generate(dir, version string) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.json files in %s", dir)
	}
	sort.Strings(files)
	sum := sha256.New()
	cmds := map[string]*jsonCommand{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(sum, "%s\x00%d\x00", filepath.Base(f), len(b))
		sum.Write(b)
		var m map[string]*jsonCommand
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Base(f), err)
		}
		for name, c := range m {
			full := strings.ToLower(name)
			if c.Container != "" {
				full = strings.ToLower(c.Container) + "|" + full
			}
			if _, dup := cmds[full]; dup {
				return nil, fmt.Errorf("%s: %s defined twice", filepath.Base(f), full)
			}
			cmds[full] = c
		}
	}
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)

	var w bytes.Buffer
	fmt.Fprintf(&w, "// Code generated by gencmd from Valkey %s's src/commands/*.json; DO NOT EDIT.\n\n", version)
	fmt.Fprintf(&w, "// Input: %d JSON files, sha256 %s (file name, length and bytes of each, in name order).\n", len(files), hex.EncodeToString(sum.Sum(nil)))
	fmt.Fprintf(&w, "// Regenerate: go generate ./internal/cmdmeta (EMQD_VALKEY_DIR set).\n\n")
	fmt.Fprintf(&w, "package cmdmeta\n\n")
	fmt.Fprintf(&w, "// valkeyCommands has %d entries: every command and subcommand of Valkey %s.\n", len(names), version)
	fmt.Fprintf(&w, "var valkeyCommands = map[string]*Command{\n")
	for _, n := range names {
		c := cmds[n]
		group := c.Group
		if i := strings.IndexByte(n, '|'); i >= 0 {
			parent := cmds[n[:i]]
			if parent == nil {
				return nil, fmt.Errorf("%s: no container %s", n, n[:i])
			}
			group = parent.Group
		}
		g, ok := groupNames[group]
		if !ok {
			return nil, fmt.Errorf("%s: unknown group %q", n, group)
		}
		if err := writeCommand(&w, n, g, c); err != nil {
			return nil, fmt.Errorf("%s: %v", n, err)
		}
	}
	fmt.Fprintf(&w, "}\n")
	out, err := format.Source(w.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt: %v", err)
	}
	return out, nil
}

func q(s string) string { return strconv.Quote(s) }

func writeCommand(w *bytes.Buffer, name, group string, c *jsonCommand) error {
	fmt.Fprintf(w, "%s: {\nName: %s, Arity: %d,\n", q(name), q(name), c.Arity)
	var fl []string
	for _, f := range c.CommandFlags {
		bit, ok := cmdmeta.FlagByJSONName(f)
		if !ok {
			return fmt.Errorf("unknown command flag %q", f)
		}
		fl = append(fl, bit.GoName())
	}
	if len(fl) > 0 {
		fmt.Fprintf(w, "Flags: %s,\n", strings.Join(fl, " | "))
	}
	var cats []string
	for _, cat := range c.ACLCategories {
		bit := cmdmeta.CategoryByName(cat)
		if bit == 0 || bit == cmdmeta.CatEMQ {
			return fmt.Errorf("unknown ACL category %q", cat)
		}
		cats = append(cats, bit.GoName())
	}
	if len(cats) > 0 {
		fmt.Fprintf(w, "ACLCategories: %s,\n", strings.Join(cats, " | "))
	}
	if len(c.KeySpecs) > 0 {
		fmt.Fprintf(w, "KeySpecs: []KeySpec{\n")
		for _, ks := range c.KeySpecs {
			if err := writeKeySpec(w, ks); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "},\n")
	}
	if c.GetKeysFunction != "" {
		fmt.Fprintf(w, "GetKeys: %s,\n", q(c.GetKeysFunction))
	}
	if len(c.CommandTips) > 0 {
		tips := make([]string, len(c.CommandTips))
		for i, t := range c.CommandTips {
			tips[i] = q(strings.ToLower(t))
		}
		fmt.Fprintf(w, "Tips: []string{%s},\n", strings.Join(tips, ", "))
	}
	for _, f := range [][2]string{{"Summary", c.Summary}, {"Since", c.Since}, {"Group", group},
		{"Complexity", c.Complexity}, {"DeprecatedSince", c.DeprecatedSince}, {"ReplacedBy", c.ReplacedBy}} {
		if f[1] != "" {
			fmt.Fprintf(w, "%s: %s,\n", f[0], q(f[1]))
		}
	}
	var df []string
	for _, f := range c.DocFlags {
		switch f {
		case "DEPRECATED":
			df = append(df, "DocDeprecated")
		case "SYSCMD":
			df = append(df, "DocSyscmd")
		default:
			return fmt.Errorf("unknown doc flag %q", f)
		}
	}
	if len(df) > 0 {
		fmt.Fprintf(w, "DocFlags: %s,\n", strings.Join(df, " | "))
	}
	if len(c.History) > 0 {
		fmt.Fprintf(w, "History: []History{\n")
		for _, h := range c.History {
			fmt.Fprintf(w, "{%s, %s},\n", q(h[0]), q(h[1]))
		}
		fmt.Fprintf(w, "},\n")
	}
	if len(c.Arguments) > 0 {
		fmt.Fprintf(w, "Args: ")
		if err := writeArgs(w, c.Arguments); err != nil {
			return err
		}
		fmt.Fprintf(w, ",\n")
	}
	fmt.Fprintf(w, "},\n")
	return nil
}

func writeKeySpec(w *bytes.Buffer, ks jsonKeySpec) error {
	fmt.Fprintf(w, "{")
	if ks.Notes != "" {
		fmt.Fprintf(w, "Notes: %s, ", q(ks.Notes))
	}
	var fl []string
	for _, f := range ks.Flags {
		bit, ok := cmdmeta.KeyFlagByJSONName(f)
		if !ok {
			return fmt.Errorf("unknown key-spec flag %q", f)
		}
		fl = append(fl, bit.GoName())
	}
	if len(fl) > 0 {
		fmt.Fprintf(w, "Flags: %s, ", strings.Join(fl, " | "))
	}
	if len(ks.BeginSearch) != 1 || len(ks.FindKeys) != 1 {
		return errors.New("a key spec needs one begin_search and one find_keys")
	}
	for typ, raw := range ks.BeginSearch {
		switch typ {
		case "index":
			var v struct{ Pos int }
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			fmt.Fprintf(w, "BeginSearch: BeginSearch{Type: \"index\", Index: %d}, ", v.Pos)
		case "keyword":
			var v struct {
				Keyword   string
				Startfrom int
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			fmt.Fprintf(w, "BeginSearch: BeginSearch{Type: \"keyword\", Keyword: %s, StartFrom: %d}, ", q(v.Keyword), v.Startfrom)
		case "unknown":
			fmt.Fprintf(w, "BeginSearch: BeginSearch{Type: \"unknown\"}, ")
		default:
			return fmt.Errorf("unknown begin_search %q", typ)
		}
	}
	for typ, raw := range ks.FindKeys {
		switch typ {
		case "range":
			var v struct{ Lastkey, Step, Limit int }
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			fmt.Fprintf(w, "FindKeys: FindKeys{Type: \"range\", LastKey: %d, KeyStep: %d, Limit: %d}", v.Lastkey, v.Step, v.Limit)
		case "keynum":
			var v struct{ Keynumidx, Firstkey, Step int }
			if err := json.Unmarshal(raw, &v); err != nil {
				return err
			}
			fmt.Fprintf(w, "FindKeys: FindKeys{Type: \"keynum\", KeyNumIdx: %d, FirstKey: %d, KeyStep: %d}", v.Keynumidx, v.Firstkey, v.Step)
		case "unknown":
			fmt.Fprintf(w, "FindKeys: FindKeys{Type: \"unknown\"}")
		default:
			return fmt.Errorf("unknown find_keys %q", typ)
		}
	}
	fmt.Fprintf(w, "},\n")
	return nil
}

var argTypes = map[string]bool{"string": true, "integer": true, "double": true, "key": true, "pattern": true,
	"unix-time": true, "pure-token": true, "oneof": true, "block": true}

func writeArgs(w *bytes.Buffer, args []jsonArg) error {
	fmt.Fprintf(w, "[]Arg{\n")
	for _, a := range args {
		if !argTypes[a.Type] {
			return fmt.Errorf("argument %s: unknown type %q", a.Name, a.Type)
		}
		fmt.Fprintf(w, "{Name: %s, Type: %s", q(strings.ToLower(a.Name)), q(a.Type))
		if a.KeySpecIndex != nil {
			fmt.Fprintf(w, ", KeySpecIndex: %d, HasKeySpec: true", *a.KeySpecIndex)
		}
		for _, f := range [][2]string{{"Token", strings.ToUpper(a.Token)}, {"Summary", a.Summary}, {"Since", a.Since},
			{"Deprecated", a.DeprecatedSince}, {"Display", strings.ToLower(a.Display)}} {
			if f[1] != "" {
				fmt.Fprintf(w, ", %s: %s", f[0], q(f[1]))
			}
		}
		var fl []string
		if a.Optional {
			fl = append(fl, "ArgOptional")
		}
		if a.Multiple {
			fl = append(fl, "ArgMultiple")
		}
		if a.MultipleToken {
			fl = append(fl, "ArgMultipleToken")
		}
		if len(fl) > 0 {
			fmt.Fprintf(w, ", Flags: %s", strings.Join(fl, " | "))
		}
		if a.Type == "oneof" || a.Type == "block" {
			fmt.Fprintf(w, ", Args: ")
			if err := writeArgs(w, a.Arguments); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "},\n")
	}
	fmt.Fprintf(w, "}")
	return nil
}
