// Command emqd is the emqd server: a Valkey-compatible RESP server with
// native job-queue verbs (EMQ.*).
//
// Usage, as valkey-server:
//
//	emqd [/path/to/emqd.conf] [--<directive> <value> ...]
//	emqd --version
//
// A directive is a valkey.conf name (port, bind, requirepass, databases,
// maxclients, loglevel, logfile, dir, appendonly, appendfsync, ...); the
// command line overrides the file. The binary is durable by default
// (appendonly yes in dir, default ./data); --appendonly no gives a pure in-memory server.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/emqd/emqd/server"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// directive is one "name value..." line of the configuration.
type directive struct {
	name string
	args []string
	line int    // line in the config file (0: command line)
	text string // the line as written, for error messages
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 1 {
		switch args[0] {
		case "-v", "--version":
			fmt.Fprintf(stdout, "emqd server v=%s (Valkey 8.0.1 compatible)\n", server.Version)
			return 0
		case "-h", "--help":
			usage(stdout)
			return 0
		}
	}
	var dirs []directive
	configFile := ""
	var configText []byte // the file read from stdin, for a daemon's copy
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		configFile = args[0]
		args = args[1:]
		var d []directive
		var err error
		if configFile == "-" {
			configText, err = io.ReadAll(stdin)
			if err == nil {
				d, err = parseConfig(bytes.NewReader(configText), 0)
			}
		} else {
			d, err = parseConfigPath(configFile, 0)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		dirs = append(dirs, d...)
	}
	fileLines := 0
	for _, d := range dirs {
		fileLines = max(fileLines, d.line)
	}
	d, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		usage(stderr)
		return 1
	}
	for i := range d {
		// Valkey appends the command line to the file's text: its
		// directives count as the lines after the file's.
		d[i].line = fileLines + i + 1
		d[i].text = d[i].name + " \"" + strings.Join(d[i].args, " ") + "\""
	}
	dirs = append(dirs, d...)

	// Defaults of the binary that differ from the embedded server's.
	// save: Valkey's own default points (docs/durability.md §9.1), so a
	// valkey.conf with appendonly no keeps its data as in Valkey.
	defaults := map[string]string{"port": "6379", "bind": "127.0.0.1", "appendonly": "yes", "dir": "./data",
		"save": "3600 1 300 100 60 10000"}
	cfg := map[string]string{}
	for k, v := range defaults {
		cfg[k] = v
	}
	sdirs := make([]server.Directive, 0, len(dirs))
	for _, d := range dirs {
		cfg[strings.ToLower(d.name)] = strings.Join(d.args, " ")
		sdirs = append(sdirs, server.Directive{Name: d.name, Args: d.args, Line: d.line, Text: d.text})
	}

	// daemonize yes: the process starts a copy of itself in a new session
	// with its standard streams on /dev/null and exits once that copy is
	// serving (or prints why it failed), docs/operations.md §3.2.
	daemon := strings.EqualFold(cfg["daemonize"], "yes")
	var ready *os.File
	if daemon {
		if os.Getenv(daemonEnv) == "" {
			return daemonize(configText, stderr)
		}
		ready = os.NewFile(3, "ready")
	}

	level := new(slog.LevelVar)
	level.Set(server.LogLevel(cfg["loglevel"]))
	var logOut io.Writer = stderr
	if lf := cfg["logfile"]; lf != "" {
		f, err := os.OpenFile(lf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "Can't open the log file: %v\n", err)
			tellParent(ready, "Can't open the log file: "+err.Error())
			return 1
		}
		defer f.Close()
		logOut = f
	}
	// log-format text (default) or json.
	log := server.NewLogger(logOut, cfg["log-format"], level)

	// pidfile (or daemonize yes): the pid and a newline, removed at exit
	// (and when the start fails); a file that cannot be written is a
	// warning, as in Valkey. It is written before the server starts, so it
	// exists once the port accepts (Valkey's main: createPidFile before
	// initListeners); a supervisor that waits for the port finds it.
	if pf := cfg["pidfile"]; pf != "" || daemon {
		if pf == "" {
			pf = defaultPidFile
		}
		if err := os.WriteFile(pf, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			log.Warn("Failed to write PID file: " + err.Error())
		} else {
			defer os.Remove(pf)
		}
	}

	s, err := server.Start(server.Options{Config: defaults, Directives: sdirs, Logger: log})
	if err != nil {
		var bad *badDirective
		var ce *server.ConfigError
		msg := err.Error()
		switch {
		case errors.As(err, &bad):
		case errors.As(err, &ce):
			// Valkey's banner for a directive it refuses, with the line it
			// came from.
			msg = directiveError(ce)
		case server.IsAOFLoadError(err):
			msg = fmt.Sprintf("Fatal error loading the append only file: %v", err)
		default:
			// Not a configuration problem (a port in use, the open-file
			// limit): the server's own words, as Valkey logs them.
		}
		fmt.Fprintln(stderr, msg)
		tellParent(ready, msg)
		log.Error("emqd failed to start", "err", err)
		return 1
	}
	if configFile != "" {
		abs := configFile
		if configFile != "-" {
			if a, err := filepath.Abs(configFile); err == nil {
				abs = a
			}
		}
		s.SetConfigFile(abs)
	}
	tellParent(ready, "")
	s.OnConfigSet("loglevel", func(v string) error { level.Set(server.LogLevel(v)); return nil })

	return serveSignals(s, log)
}

// signalsReady, when set (tests), is called once the signal handlers are
// in place.
var signalsReady func()

// exitNow ends the process at once (a second SIGINT); tests replace it.
var exitNow = os.Exit

// serveSignals handles signals as valkey-server does until the server
// stops, and returns the exit status: SIGHUP and SIGPIPE are ignored
// (Valkey's main: a closed terminal or a reader gone from a pipe does not
// stop a server); SIGTERM and SIGINT log "Received SIGTERM scheduling
// shutdown..." (SIGINT) and shut down cleanly (the AOF made durable, exit
// 0); a second SIGINT during that shutdown logs "You insist... exiting
// now." and exits 1 at once (Valkey's sigShutdownHandler). When the final
// RDB save fails the shutdown is cancelled and the server goes on serving,
// as Valkey's ("Error trying to save the DB, can't exit."). SHUTDOWN from
// a client ends it too. docs/operations.md §12.
func serveSignals(s *server.Server, log *slog.Logger) int {
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	if signalsReady != nil {
		signalsReady()
	}
	for {
		select {
		case got := <-sig:
			log.Warn(shutdownMessage(got))
			if err := s.PrepareShutdown(); err != nil {
				// The final save failed: Valkey cancels the shutdown and
				// goes on serving (its prepareForShutdown logged why).
				continue
			}
			return closeOnSignal(s, sig, log)
		case <-s.Done():
			// SHUTDOWN from a client.
			return 0
		}
	}
}

// closeOnSignal closes the server after a shutdown signal, watching for a
// second one.
func closeOnSignal(s *server.Server, sig chan os.Signal, log *slog.Logger) int {
	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- s.Close(ctx)
	}()
	for {
		select {
		case again := <-sig:
			if again == syscall.SIGINT {
				log.Warn("You insist... exiting now.")
				exitNow(1)
				return 1
			}
			log.Warn(shutdownMessage(again))
		case err := <-closed:
			if err != nil {
				log.Error("shutdown", "err", err)
				return 1
			}
			return 0
		}
	}
}

// shutdownMessage is Valkey's log line for a shutdown signal.
func shutdownMessage(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "Received SIGINT scheduling shutdown..."
	case syscall.SIGTERM:
		return "Received SIGTERM scheduling shutdown..."
	}
	return "Received shutdown signal, scheduling shutdown..."
}

type badDirective struct{ msg string }

func (b *badDirective) Error() string { return b.msg }

// parseArgs reads "--name value..." groups, as valkey-server: every
// argument up to the next "--name" is a value of the previous name;
// "--name" with no value means the empty string.
func parseArgs(args []string) ([]directive, error) {
	var out []directive
	for _, a := range args {
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			out = append(out, directive{name: a[2:]})
			continue
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("Invalid argument '%s': directives are given as --name value", a)
		}
		out[len(out)-1].args = append(out[len(out)-1].args, a)
	}
	for i := range out {
		if len(out[i].args) == 0 {
			out[i].args = []string{""}
		}
	}
	return out, nil
}

// parseConfigFile reads valkey.conf syntax from r (include paths are
// relative to the working directory, as in Valkey).
func parseConfigFile(r io.Reader) ([]directive, error) { return parseConfig(r, 0) }

// parseConfigPath reads one config file (include's depth so far).
func parseConfigPath(path string, depth int) ([]directive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &badDirective{fmt.Sprintf("Fatal error, can't open config file '%s': %v", path, err)}
	}
	defer f.Close()
	return parseConfig(f, depth)
}

// cNulText is a config file's bytes as Valkey 8.0.1 reads them (config.c
// loadServerConfig): fgets chunks of at most 1024 bytes, each ending at its
// newline, appended as C strings, so each chunk ends at its first NUL and
// loses what follows it, newline included. A line that starts with a NUL is
// gone; one with a NUL inside joins the next line (`port 1\x00x` then
// `save ""` reads `port 1save ""`, wrong number of arguments on both).
// The newcomer run of this stop found emqd refusing a junk line Valkey skips.
func cNulText(raw []byte) []byte {
	if bytes.IndexByte(raw, 0) < 0 {
		return raw
	}
	out := make([]byte, 0, len(raw))
	for len(raw) > 0 {
		n := min(len(raw), configReadLen)
		if i := bytes.IndexByte(raw[:n], '\n'); i >= 0 {
			n = i + 1
		}
		chunk := raw[:n]
		if i := bytes.IndexByte(chunk, 0); i >= 0 {
			chunk = chunk[:i]
		}
		out = append(out, chunk...)
		raw = raw[n:]
	}
	return out
}

// configReadLen is Valkey's CONFIG_READ_LEN, the fgets chunk of cNulText.
const configReadLen = 1024

// maxIncludeDepth bounds include chains (a file including itself).
const maxIncludeDepth = 16

// parseConfig reads valkey.conf syntax: one directive per line, "#"
// comments, arguments split with Valkey's quoting rules. "include <glob>"
// reads each matching file in place, as Valkey (a pattern matching nothing
// is an error only without wildcards); its lines keep their own numbers.
func parseConfig(r io.Reader, depth int) ([]directive, error) {
	var out []directive
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, &badDirective{fmt.Sprintf("Fatal error, can't read config file: %v", err)}
	}
	// Lines of any length, as Valkey's loadServerConfigFromString splits
	// the whole text on newlines (a bufio.Scanner refused a line over its
	// 1 MiB buffer with "token too long", naming neither file nor line).
	n := 0
	for _, text := range strings.Split(string(cNulText(raw)), "\n") {
		n++
		line := strings.TrimSpace(text)
		if line == "" || line[0] == '#' {
			continue
		}
		argv, ok := server.SplitConfigLine(line)
		if !ok {
			return nil, configError(n, line, "Unbalanced quotes in configuration line")
		}
		if len(argv) == 0 {
			continue
		}
		if len(argv) < 2 {
			if !server.KnownDirective(argv[0]) {
				return nil, configError(n, line, "Bad directive or wrong number of arguments")
			}
			return nil, configError(n, line, "wrong number of arguments")
		}
		if strings.EqualFold(argv[0], "include") {
			if len(argv) != 2 {
				return nil, configError(n, line, "wrong number of arguments")
			}
			if depth >= maxIncludeDepth {
				return nil, configError(n, line, "include nested too deep (a file including itself?)")
			}
			files, err := filepath.Glob(argv[1])
			if err != nil || (len(files) == 0 && !strings.ContainsAny(argv[1], "*?[")) {
				files = []string{argv[1]}
			}
			for _, f := range files {
				d, err := parseConfigPath(f, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, d...)
			}
			continue
		}
		out = append(out, directive{name: argv[0], args: argv[1:], line: n, text: line})
	}
	return out, nil
}

// directiveError renders a refused directive as Valkey's config loader
// does: the line, as written, then the reason.
func directiveError(ce *server.ConfigError) string {
	text := ce.Text
	if text == "" {
		text = ce.Name + " \"" + ce.Value + "\""
	}
	return configError(ce.Line, text, ce.Msg).Error()
}

func configError(line int, text, msg string) error {
	return &badDirective{fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR (emqd %s) ***\nReading the configuration file, at line %d\n>>> '%s'\n%s",
		server.Version, line, text, msg)}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: emqd [/path/to/emqd.conf] [options]
       emqd - (read config from stdin)
       emqd -v or --version
       emqd -h or --help

Examples:
       emqd (run the server with default config: port 6379, appendonly yes in ./data)
       emqd /etc/emqd/emqd.conf
       emqd --port 7777
       emqd --port 7777 --appendonly no
       emqd /etc/myemqd.conf --loglevel verbose --requirepass secret
       emqd --metrics-addr 127.0.0.1:9121 --log-format json
`)
}
