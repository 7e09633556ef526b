package verbs

import "strings"

// Keys names the keys of one queue q (docs/verbs.md §1.1). Every key carries
// the hash tag {q}, so all of them live in the slot of the bare name q.
type Keys struct {
	Queue     string // q itself
	Pending   string // emq:{q}:pending   (zset, score 0)
	Active    string // emq:{q}:active    (zset, score = lease deadline ms)
	Schedule  string // emq:{q}:schedule  (zset, score = run-at ms)
	Dead      string // emq:{q}:dead      (zset, score 0)
	Completed string // emq:{q}:metrics:completed (hash, field count)
	Failed    string // emq:{q}:metrics:failed    (hash, field count)
	Meta      string // emq:{q}:meta      (hash, field paused, the retention settings)
	Done      string // emq:{q}:completed (zset of retained completed jobs, score = finished_at ms)
	Events    string // emq:{q}:events    (the Pub/Sub channel of the queue's transitions, not a key)
	JobPrefix string // emq:{q}:job:      (the row key is JobPrefix + id)
	Sched     string // emq:{q}:sched     (zset: schedule name, score = next fire ms; docs/verbs.md §4.22)
	SchedPref string // emq:{q}:sched:    (the schedule's hash is SchedPref + name)
	Waiting   string // emq:{q}:waiting   (zset of flow parents waiting on children, score 0; docs/verbs.md §4.25)
	FlowPref  string // emq:{q}:flow:     (a parent's roster is FlowPref + id, its outcomes FlowPref + id + ":out")
	// Lanes (docs/verbs.md §4.26): the lanes the selection may pick now
	// (zset, score = pass), those waiting for a rate token (zset, score =
	// the token's time, Unix ms), every lane with state (zset, score 0),
	// and the prefix of one lane's keys (LanePrefix + name: its hash;
	// + ":pending", + ":spent").
	Lanes        string // emq:{q}:lanes
	LanesLimited string // emq:{q}:lanes:limited
	LanesKnown   string // emq:{q}:lanes:known
	LanePrefix   string // emq:{q}:lane:

	// laneCache holds the key names of the lanes used last (laneKeys).
	laneCache [laneCacheSize]laneKeyNames
	laneNext  int

	// qs caches the queue's counters in database qsDB of the Stats qsOf,
	// taken at its Prune generation qsGen (Stats.knownFor).
	qs    *QueueStats
	qsOf  *Stats
	qsDB  int
	qsGen uint64
}

// laneCacheSize is how many lanes' key names a queue's Keys keep: a verb
// touches one or two lanes, and a queue whose work runs in a few lanes
// builds their names once (a queue of many lanes builds them as before).
const laneCacheSize = 4

// laneKeyNames are one lane's name and keys (docs/verbs.md §4.26): its hash
// LanePrefix+name, its pending set (+":pending"; the default lane's is
// Pending) and its rate log (+":spent"), sharing one allocation.
type laneKeyNames struct {
	name, hkey, pkey, skey string
}

// laneKeys returns the key names of lane name, from the cache or built
// (one allocation) and cached. name need not outlive the call: the names
// returned are the cache's own. Called under the store lock, as every
// verb (the cache is not otherwise guarded).
func (k *Keys) laneKeys(name string) laneKeyNames {
	for i := range k.laneCache {
		if c := &k.laneCache[i]; c.hkey != "" && c.name == name {
			return *c
		}
	}
	const pend, spent = ":pending", ":spent"
	p := len(k.LanePrefix)
	var sb strings.Builder
	sb.Grow(2*(p+len(name)) + len(pend) + len(spent))
	sb.WriteString(k.LanePrefix)
	sb.WriteString(name)
	sb.WriteString(pend)
	sb.WriteString(k.LanePrefix)
	sb.WriteString(name)
	sb.WriteString(spent)
	all := sb.String()
	h := p + len(name)
	c := laneKeyNames{name: all[p:h], hkey: all[:h], pkey: all[:h+len(pend)], skey: all[h+len(pend):]}
	if name == DefaultLane {
		c.pkey = k.Pending
	}
	k.laneCache[k.laneNext] = c
	k.laneNext = (k.laneNext + 1) % laneCacheSize
	return c
}

// MintKey is the hash whose field `last` holds the greatest id the server
// has minted (docs/verbs.md §1.4).
const MintKey = "{emq}:mint"

// Row is the key of the job row of id.
func (k *Keys) Row(id string) string { return k.JobPrefix + id }

// Roster is the key of the roster of flow parent id (docs/verbs.md §4.25):
// a hash, field <child_queue>:<child_id>, value the child's end.
func (k *Keys) Roster(id string) string { return k.FlowPref + id }

// RosterOut is the key of the outcomes of parent id's ended children: a
// hash, field <child_queue>:<child_id>, value the child's RESULT (completed)
// or its last error (dead).
func (k *Keys) RosterOut(id string) string { return k.FlowPref + id + ":out" }

// The parts of a queue's own keys: the text after "emq:{q}:" (job rows,
// "job:<id>", are not among them).
const (
	PartPending   = "pending"
	PartActive    = "active"
	PartSchedule  = "schedule"
	PartDead      = "dead"
	PartCompleted = "metrics:completed"
	PartFailed    = "metrics:failed"
	PartMeta      = "meta"
	PartDone      = "completed"
	partEvents    = "events"
	PartSched     = "sched"
	PartWaiting   = "waiting"
	PartLanes     = "lanes:known"
	partJob       = "job:"
)

const (
	keyPrefix = "emq:{"
	keyTagEnd = "}:"
)

// NewKeys builds the key names of queue q (no validation; see validQueue).
func NewKeys(q string) *Keys {
	p := keyPrefix + q + keyTagEnd
	return &Keys{
		Queue:     q,
		Pending:   p + PartPending,
		Active:    p + PartActive,
		Schedule:  p + PartSchedule,
		Dead:      p + PartDead,
		Completed: p + PartCompleted,
		Failed:    p + PartFailed,
		Meta:      p + PartMeta,
		Done:      p + PartDone,
		Events:    p + partEvents,
		JobPrefix: p + partJob,
		Sched:     p + PartSched,
		SchedPref: p + PartSched + ":",
		Waiting:   p + PartWaiting,
		FlowPref:  p + "flow:",

		Lanes:        p + "lanes",
		LanesLimited: p + "lanes:limited",
		LanesKnown:   p + PartLanes,
		LanePrefix:   p + "lane:",
	}
}

// ParseQueueKey reports whether key is one of the queue keys NewKeys names
// (pending, active, schedule, dead, completed, meta, sched, waiting or a
// metrics hash; not a job row)
// of a valid queue name, and returns the queue and the part (PartActive,
// ...). The server's sweeper and its statistics find the queues of a
// keyspace with it.
func ParseQueueKey(key string) (queue, part string, ok bool) {
	rest, ok := strings.CutPrefix(key, keyPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.Index(rest, keyTagEnd)
	if i < 0 {
		return "", "", false
	}
	queue, part = rest[:i], rest[i+len(keyTagEnd):]
	switch part {
	case PartPending, PartActive, PartSchedule, PartDead, PartCompleted, PartFailed, PartMeta, PartDone, PartSched, PartWaiting, PartLanes:
	default:
		return "", "", false
	}
	if !validQueue([]byte(queue)) {
		return "", "", false
	}
	return queue, part, true
}

// keyCacheMax bounds Verbs.keys (queue names come from clients): once full
// it is emptied and refilled.
const keyCacheMax = 4096

// keysFor returns the (shared, read-only) Keys of queue name b.
func (vs *Verbs) keysFor(b []byte) *Keys {
	if k := vs.keys[string(b)]; k != nil {
		return k
	}
	if vs.keys == nil || len(vs.keys) >= keyCacheMax {
		vs.keys = make(map[string]*Keys)
	}
	k := NewKeys(string(b))
	vs.keys[k.Queue] = k
	return k
}

// keysOf is keysFor of a queue name held as a string (a typed method's
// argument): the cache's own string when it knows the queue.
func (vs *Verbs) keysOf(q string) *Keys {
	if k := vs.keys[q]; k != nil {
		return k
	}
	if vs.keys == nil || len(vs.keys) >= keyCacheMax {
		vs.keys = make(map[string]*Keys)
	}
	k := NewKeys(q)
	vs.keys[k.Queue] = k
	return k
}

// validQueue reports whether b is a queue name: ^[A-Za-z0-9._-]{1,128}$ and
// not "emq" (docs/verbs.md §2.8; `emq` is the tag of {emq}:mint).
func validQueue(b []byte) bool {
	if len(b) == 0 || len(b) > 128 {
		return false
	}
	for _, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return string(b) != "emq"
}

// Job ids (docs/verbs.md §1.4): "JOB" followed by 11 characters of 0-9A-Za-z.
// Minted ids encode a number in base 62 with that alphabet, which is in
// ASCII order, at fixed width: byte order equals numeric (mint) order.
const (
	idPrefix   = "JOB"
	idDigits   = 11
	idLen      = len(idPrefix) + idDigits
	b62        = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	maxMintNum = 1<<63 - 1 // minted numbers stay within int64 (62^11 > 2^63)
)

// ValidID reports whether b is a job id: "JOB" + 11 of [0-9A-Za-z]
// (docs/verbs.md §1.4).
func ValidID(b []byte) bool {
	if len(b) != idLen || string(b[:3]) != idPrefix {
		return false
	}
	for _, c := range b[3:] {
		if b62val(c) < 0 {
			return false
		}
	}
	return true
}

func b62val(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 36
	}
	return -1
}

// EncodeID returns the minted id of n (0 <= n <= 2^63-1).
func EncodeID(n int64) string {
	var b [idLen]byte
	encodeID(n, &b)
	return string(b[:])
}

func encodeID(n int64, b *[idLen]byte) {
	copy(b[:], idPrefix)
	u := uint64(n)
	for i := idLen - 1; i >= len(idPrefix); i-- {
		b[i] = b62[u%62]
		u /= 62
	}
}

// DecodeID returns the number a valid id encodes; ok is false when b is not
// a valid id or encodes a number above 2^63-1.
func DecodeID(b []byte) (int64, bool) {
	if !ValidID(b) {
		return 0, false
	}
	var u uint64
	for _, c := range b[3:] {
		d := uint64(b62val(c))
		if u > (maxMintNum-d)/62 {
			return 0, false
		}
		u = u*62 + d
	}
	return int64(u), true
}

// mintNumber is the number of the next minted id: the larger of now and
// last+1 (hasLast false: no id minted yet), never below 0 (docs/verbs.md
// §1.4: minted ids are strictly increasing for the life of the data).
// ok is false when the id space is exhausted.
func mintNumber(now int64, last int64, hasLast bool) (int64, bool) {
	n := now
	if n < 0 {
		n = 0
	}
	if hasLast {
		if last >= maxMintNum {
			return 0, false
		}
		if last+1 > n {
			n = last + 1
		}
	}
	return n, true
}
