package cmdmeta

// emqCommands are the metadata of the commands emqd has and Valkey 8.0.1
// has not: the EMQ.* verbs and EMQ.DEBUG, written by hand in the shape of
// the generated Valkey entries (valkey_gen.go). A new command's entry goes
// here, one line of emqVerb (or a full Command literal) per command or
// subcommand, with its grammar in Args (docs/architecture.md, "Command
// metadata"). server's TestCommandMetadataComplete fails, naming this
// file, for a registered command without an entry; its flags and arity are
// what the dispatcher uses.
var emqCommands = map[string]*Command{}

// emqOrder is the verb table's order: the names of emqCommands as emq.go
// lists them, subcommands after their container.
var emqOrder []string

func init() {
	for _, c := range []*Command{
		emqVerb("emq.enqueue", -4, FlagWrite|FlagDenyOOM|FlagFast, KeyRW|KeyInsert,
			"Admits a job to a queue, pending or scheduled.",
			arg("id", "string"), arg("payload", "string"),
			oneOf("when", ArgOptional, tok("delay-ms", "integer", "DELAY"), tok("run-at-ms", "unix-time", "AT")),
			opt(tok("priority", "integer", "PRIORITY")), opt(tok("lane", "string", "LANE"))),
		emqVerb("emq.enqueue.many", -5, FlagWrite|FlagDenyOOM, KeyRW|KeyInsert,
			"Admits many jobs to a queue in one atomic step, each as EMQ.ENQUEUE.",
			oneOf("when", ArgOptional, tok("delay-ms", "integer", "DELAY"), tok("run-at-ms", "unix-time", "AT")),
			opt(tok("priority", "integer", "PRIORITY")), opt(tok("lane", "string", "LANE")),
			Arg{Name: "job", Type: "block", Token: "JOBS", Flags: ArgMultiple, Args: []Arg{
				arg("id", "string"), arg("payload", "string")}}),
		emqVerb("emq.claim", -3, FlagWrite|FlagBlocking, KeyRW|KeyUpdate,
			"Leases up to count claimable jobs of a queue, waiting up to block_ms for one.",
			arg("lease-ms", "integer"), opt(tok("count", "integer", "COUNT")), opt(tok("block-ms", "integer", "BLOCK"))),
		emqVerb("emq.complete", -4, FlagWrite|FlagFast, KeyRW|KeyDelete,
			"Completes a leased job (the holder's token) (deleted, or retained with its result); with NEXT, claims the next jobs.",
			arg("id", "string"), arg("token", "string"), opt(tok("result", "string", "RESULT")), nextArg()),
		emqVerb("emq.fail", -7, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Reports a leased job's failure: retried after delay_ms, or dead after max_attempts; with NEXT, claims the next jobs.",
			arg("id", "string"), arg("token", "string"), arg("max-attempts", "integer"),
			arg("delay-ms", "integer"), arg("error", "string"), nextArg()),
		emqVerb("emq.requeue", 4, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Returns a leased job to pending without counting a failure.",
			arg("id", "string"), arg("token", "string")),
		emqVerb("emq.extend", 5, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Extends a leased job's lease to lease_ms from now.",
			arg("id", "string"), arg("token", "string"), arg("lease-ms", "integer")),
		emqVerb("emq.delay", 6, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Moves a leased job to the schedule, due in delay_ms or at run_at_ms.",
			arg("id", "string"), arg("token", "string"),
			oneOf("when", 0, tok("delay-ms", "integer", "IN"), tok("run-at-ms", "unix-time", "AT"))),
		emqVerb("emq.progress", 5, FlagWrite|FlagDenyOOM|FlagFast, KeyRW|KeyUpdate,
			"Records a leased job's progress value.",
			arg("id", "string"), arg("token", "string"), arg("value", "string")),
		emqVerb("emq.stalled.check", -2, FlagWrite, KeyRW|KeyUpdate,
			"Recovers the jobs whose lease expired: retried, or dead after max_stalled stalls.",
			Arg{Name: "budget", Type: "block", Flags: ArgOptional, Args: []Arg{
				arg("max-stalled", "integer"), opt(arg("limit", "integer"))}},
			opt(tok("interval-ms", "integer", "EVERY"))),
		emqVerb("emq.promote", -2, FlagWrite, KeyRW|KeyUpdate,
			"Moves the due scheduled jobs of a queue to pending.",
			opt(arg("limit", "integer"))),
		emqVerb("emq.reprocess", -3, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Returns a dead job to pending.",
			arg("id", "string"), opt(pure("reset", "RESET"))),
		emqVerb("emq.pause", 2, FlagWrite|FlagFast, KeyRW|KeyUpdate, "Stops a queue's claims."),
		emqVerb("emq.resume", 2, FlagWrite|FlagFast, KeyRW|KeyUpdate, "Resumes a paused queue's claims."),
		emqVerb("emq.remove", 3, FlagWrite|FlagFast, KeyRW|KeyDelete,
			"Removes a job that is not leased.",
			arg("id", "string")),
		emqVerb("emq.reprocess.all", -2, FlagWrite, KeyRW|KeyUpdate,
			"Returns up to limit dead jobs of a queue to pending; replies [done, left].",
			opt(pure("reset", "RESET")), opt(tok("limit", "integer", "LIMIT"))),
		emqVerb("emq.remove.all", -3, FlagWrite, KeyRW|KeyDelete,
			"Removes up to limit jobs of one state (pending, scheduled, dead, completed) of a queue, pending of every lane or of one (LANE); replies [done, left].",
			oneOf("state", 0, pure("pending", "PENDING"), pure("scheduled", "SCHEDULED"), pure("dead", "DEAD"),
				pure("completed", "COMPLETED")), opt(tok("limit", "integer", "LIMIT")), opt(tok("lane", "string", "LANE"))),
		emqVerb("emq.promote.all", -2, FlagWrite, KeyRW|KeyUpdate,
			"Moves up to limit scheduled jobs of a queue to pending now, due or not; replies [done, left].",
			opt(tok("limit", "integer", "LIMIT"))),
		emqVerb("emq.promote.job", 3, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Moves one scheduled job to pending now (run now).",
			arg("id", "string")),
		emqVerb("emq.lane", -4, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Configures one lane of a queue: its weight, MAX_ACTIVE, RATE, pause (docs/verbs.md §4.26).",
			arg("name", "string"), opt(tok("weight", "integer", "WEIGHT")), opt(tok("max-active", "integer", "MAX_ACTIVE")),
			Arg{Name: "rate", Type: "block", Token: "RATE", Flags: ArgOptional, Args: []Arg{
				arg("count", "integer"), arg("per-ms", "integer")}},
			opt(oneOf("pause", 0, pure("pause", "PAUSE"), pure("resume", "RESUME"))), opt(pure("reset", "RESET"))),
		emqVerb("emq.lanes", -2, FlagReadonly, KeyRO|KeyAccess,
			"Returns a page of a queue's lanes, by name, with their pending and active counts and settings.",
			Arg{Name: "page", Type: "block", Flags: ArgOptional, Args: []Arg{arg("offset", "integer"), arg("count", "integer")}}),
		emqVerb("emq.counts", 2, FlagReadonly|FlagFast, KeyRO|KeyAccess,
			"Returns the number of jobs in each state and the completed and failed counters."),
		emqVerb("emq.job", 3, FlagReadonly|FlagFast, KeyRO|KeyAccess,
			"Returns a job's row.",
			arg("id", "string")),
		emqVerb("emq.wait", 4, FlagReadonly|FlagBlocking, KeyRO|KeyAccess,
			"Waits until a job is completed or dead and returns its state, result or error.",
			arg("id", "string"), arg("timeout-ms", "integer")),
		emqVerb("emq.retain", -2, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Sets or shows a queue's retention of completed and dead jobs.",
			Arg{Name: "setting", Type: "block", Flags: ArgOptional, Args: []Arg{
				oneOf("kind", 0, pure("completed", "COMPLETED"), pure("dead", "DEAD")),
				arg("max-count", "integer"), arg("max-age-ms", "integer")}}),
		emqVerb("emq.flow", -8, FlagWrite|FlagDenyOOM, KeyRW|KeyInsert,
			"Adds a parent job that waits until its child jobs have ended, and the children, in one atomic unit (docs/verbs.md §4.25).",
			arg("parent-id", "string"), arg("parent-payload", "string"),
			opt(Arg{Name: "policy", Type: "oneof", Token: "ON_CHILD_FAIL", Args: []Arg{
				pure("fail", "FAIL"), pure("ignore", "IGNORE"), pure("continue", "CONTINUE")}}),
			Arg{Name: "child", Type: "block", Token: "CHILD", Flags: ArgMultiple | ArgMultipleToken, Args: []Arg{
				arg("child-queue", "string"), arg("child-id", "string"), arg("child-payload", "string"),
				opt(Arg{Name: "under", Type: "block", Token: "UNDER", Args: []Arg{arg("under-queue", "string"), arg("under-id", "string")}}),
				opt(Arg{Name: "child-policy", Type: "oneof", Token: "ON_CHILD_FAIL", Args: []Arg{
					pure("fail", "FAIL"), pure("ignore", "IGNORE"), pure("continue", "CONTINUE")}})}}),
		emqVerb("emq.children", 3, FlagReadonly, KeyRO|KeyAccess,
			"Returns a flow parent's children: queue, id, state, and result or error.",
			arg("parent-id", "string")),
		emqVerb("emq.list", -3, FlagReadonly, KeyRO|KeyAccess,
			"Returns a page of the job ids in one state (pending: of every lane, or of one with LANE).",
			arg("state", "string"), Arg{Name: "page", Type: "block", Flags: ArgOptional, Args: []Arg{
				arg("offset", "integer"), arg("count", "integer")}}, opt(tok("lane", "string", "LANE"))),
		emqVerb("emq.schedule", -6, FlagWrite|FlagDenyOOM, KeyRW|KeyInsert,
			"Creates or replaces a schedule that enqueues a job at each of its slots (docs/verbs.md §4.22).",
			arg("name", "string"),
			oneOf("every-or-cron", 0, tok("interval-ms", "integer", "EVERY"),
				Arg{Name: "cron", Type: "block", Args: []Arg{tok("spec", "string", "CRON"), opt(tok("zone", "string", "TZ"))}}),
			arg("payload", "string"), opt(tok("start-ms", "unix-time", "START")), opt(tok("end-ms", "unix-time", "END")),
			opt(tok("limit", "integer", "LIMIT")),
			opt(oneOf("overlap", 0, pure("allow", "ALLOW"), pure("skip", "SKIP"))),
			opt(oneOf("catchup", 0, pure("none", "NONE"), pure("one", "ONE"), pure("all", "ALL")))),
		emqVerb("emq.schedule.get", 3, FlagReadonly|FlagFast, KeyRO|KeyAccess,
			"Returns a schedule's definition and progress.", arg("name", "string")),
		emqVerb("emq.schedule.del", 3, FlagWrite|FlagFast, KeyRW|KeyDelete,
			"Deletes a schedule (its enqueued occurrences stay).", arg("name", "string")),
		emqVerb("emq.schedule.list", -2, FlagReadonly, KeyRO|KeyAccess,
			"Returns a page of a queue's schedules, next fire first.",
			Arg{Name: "page", Type: "block", Flags: ArgOptional, Args: []Arg{arg("offset", "integer"), arg("count", "integer")}}),
		emqVerb("emq.schedule.pause", 3, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Pauses a schedule.", arg("name", "string")),
		emqVerb("emq.schedule.resume", 3, FlagWrite|FlagFast, KeyRW|KeyUpdate,
			"Resumes a paused schedule at its next slot from now.", arg("name", "string")),
		emqVerb("emq.schedule.fire", -2, FlagWrite, KeyRW|KeyInsert,
			"Fires a queue's due schedule slots (the server runs it on its timer).", opt(arg("limit", "integer"))),
		{Name: "emq.debug", Arity: -2, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale,
			Summary: "A container for debugging commands.", Group: "emq", Complexity: "Depends on subcommand."},
		{Name: "emq.debug|clock", Arity: 4, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale,
			Summary: "Moves the server clock forward by ms (enable-debug-command).", Group: "emq", Complexity: "O(1)",
			Args: []Arg{pure("advance", "ADVANCE"), arg("ms", "integer")}},
		{Name: "emq.debug|help", Arity: 2, Flags: FlagLoading | FlagStale,
			Summary: "Returns helpful text about the different subcommands.", Group: "emq", Complexity: "O(1)"},
	} {
		if _, dup := emqCommands[c.Name]; dup {
			panic("cmdmeta: " + c.Name + " defined twice in emq.go")
		}
		emqCommands[c.Name] = c
		emqOrder = append(emqOrder, c.Name)
	}
}

// Verbs returns the verb table (docs/architecture.md §8.2): emqd's own
// entries in the order emq.go lists them, a container's subcommands right
// after it. Everything else about a verb is derived from it and checked
// against it: verbs.Commands (arity, flags, key position), the README's
// verb table, the functions cluster/emq.lua registers, the generators of
// the property tests (internal/verbgen). Callers must not modify the
// entries.
func Verbs() []*Command {
	out := make([]*Command, len(emqOrder))
	for i, n := range emqOrder {
		out[i] = emqCommands[n]
	}
	return out
}

// emqVerb is the entry of an EMQ verb: its first argument is the queue
// name, the one declared key (docs/verbs.md §1.1), with key flags kf; the
// verb is in ACL category @emq and group "emq"; args are the arguments
// after the queue name.
func emqVerb(name string, arity int, flags Flag, kf KeyFlag, summary string, args ...Arg) *Command {
	complexity := "O(1)"
	if flags&FlagFast == 0 {
		complexity = "O(N) where N is the number of jobs handled (docs/verbs.md)"
	}
	return &Command{
		Name: name, Arity: arity, Flags: flags, ACLCategories: CatEMQ,
		KeySpecs: []KeySpec{{Flags: kf,
			BeginSearch: BeginSearch{Type: "index", Index: 1},
			FindKeys:    FindKeys{Type: "range", LastKey: 0, KeyStep: 1, Limit: 0}}},
		Summary: summary, Group: "emq", Complexity: complexity,
		Args: append([]Arg{{Name: "queue", Type: "key", KeySpecIndex: 0, HasKeySpec: true}}, args...),
	}
}

// nextArg is the NEXT lease_ms [COUNT count] tail of EMQ.COMPLETE and
// EMQ.FAIL (docs/verbs.md §4.5.1).
func nextArg() Arg {
	return Arg{Name: "next", Type: "block", Flags: ArgOptional, Args: []Arg{
		tok("lease-ms", "integer", "NEXT"), opt(tok("count", "integer", "COUNT"))}}
}

func arg(name, typ string) Arg { return Arg{Name: name, Type: typ} }

func tok(name, typ, token string) Arg { return Arg{Name: name, Type: typ, Token: token} }

func pure(name, token string) Arg { return Arg{Name: name, Type: "pure-token", Token: token} }

func opt(a Arg) Arg { a.Flags |= ArgOptional; return a }

func oneOf(name string, flags ArgFlag, alts ...Arg) Arg {
	return Arg{Name: name, Type: "oneof", Flags: flags, Args: alts}
}
