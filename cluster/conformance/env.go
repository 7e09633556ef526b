package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// env is one scenario's view of a target: a RESP2 client and helpers that
// read the keyspace with plain commands (the same on both targets).
type env struct {
	t   testing.TB
	tg  Target
	rdb *redis.Client
	ctx context.Context
}

func newEnv(t testing.TB, tg Target) *env {
	return &env{t: t, tg: tg, rdb: tg.Client(2), ctx: context.Background()}
}

// do sends one command; a nil reply is (nil, nil).
func (e *env) do(args ...any) (any, error) {
	v, err := e.rdb.Do(e.ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// ok sends a command that must succeed.
func (e *env) ok(args ...any) any {
	e.t.Helper()
	v, err := e.do(args...)
	if err != nil {
		e.t.Fatalf("%s: %v: %v", e.tg.Name(), args, err)
	}
	return v
}

// refused sends a command that must be refused and returns the error text.
func (e *env) refused(args ...any) string {
	e.t.Helper()
	v, err := e.do(args...)
	if err == nil {
		e.t.Fatalf("%s: %v: not refused, got %#v", e.tg.Name(), args, v)
	}
	return err.Error()
}

// row returns the row of id in q as "f=v ..." with the fields sorted ("" when
// there is no row). Field order is not compared across targets (see
// Differences).
func (e *env) row(q, id string) string {
	e.t.Helper()
	v := e.ok("HGETALL", "emq:{"+q+"}:job:"+id).([]any)
	var parts []string
	for i := 0; i+1 < len(v); i += 2 {
		parts = append(parts, fmt.Sprint(v[i])+"="+fmt.Sprint(v[i+1]))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// rowOf builds the expected row text from field=value pairs.
func rowOf(fv ...string) string {
	parts := append([]string(nil), fv...)
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// field is one field of a row ("<absent>" when missing).
func (e *env) field(q, id, f string) string {
	e.t.Helper()
	v, err := e.do("HGET", "emq:{"+q+"}:job:"+id, f)
	if err != nil {
		e.t.Fatal(err)
	}
	if v == nil {
		return "<absent>"
	}
	return v.(string)
}

// claim claims one job of q and returns id, token, failures.
func (e *env) claim(q string, lease int64) (string, string, int64) {
	e.t.Helper()
	v := e.ok("EMQ.CLAIM", q, lease).([]any)
	if len(v) != 1 {
		e.t.Fatalf("%s: claim %s: %v", e.tg.Name(), q, v)
	}
	j := v[0].([]any)
	return j[0].(string), j[2].(string), j[3].(int64)
}

// zmembers lists a sorted set's members in order.
func (e *env) zmembers(key string) []string {
	e.t.Helper()
	v := e.ok("ZRANGE", key, "0", "-1").([]any)
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = x.(string)
	}
	return out
}

// zscore is a member's score as text ("" when not a member).
func (e *env) zscore(key, member string) string {
	e.t.Helper()
	v, err := e.do("ZSCORE", key, member)
	if err != nil {
		e.t.Fatal(err)
	}
	if v == nil {
		return ""
	}
	return v.(string)
}

// dirty is INFO's rdb_changes_since_last_save: every write counts.
func (e *env) dirty() int64 {
	e.t.Helper()
	info := e.ok("INFO", "persistence").(string)
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "rdb_changes_since_last_save:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	e.t.Fatalf("%s: no rdb_changes_since_last_save in INFO", e.tg.Name())
	return 0
}

// expired makes id an expired lease of q by hand: active, attempts 1,
// lease_epoch epoch ("" for none), extra fields, deadline in the past.
func (e *env) expired(q, id, epoch string, extra ...any) {
	e.t.Helper()
	args := []any{"HSET", "emq:{" + q + "}:job:" + id, "state", "active", "attempts", "1", "payload", "p"}
	if epoch != "" {
		args = append(args, "lease_epoch", epoch)
	}
	e.ok(append(args, extra...)...)
	e.ok("ZADD", "emq:{"+q+"}:active", e.tg.Now()-1, id)
}

// keyspace reads every key of db 0 with plain commands: key -> "type:
// content" with hash fields sorted, sorted-set members in order with their
// scores as numbers. skip drops keys.
func (e *env) keyspace(skip func(key string) bool) map[string]string {
	e.t.Helper()
	out := map[string]string{}
	var cursor uint64
	for {
		keys, next, err := e.rdb.Scan(e.ctx, cursor, "*", 1000).Result()
		if err != nil {
			e.t.Fatalf("%s: SCAN: %v", e.tg.Name(), err)
		}
		for _, k := range keys {
			if skip != nil && skip(k) {
				continue
			}
			out[k] = e.dump(k)
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	return out
}

func (e *env) dump(k string) string {
	e.t.Helper()
	typ := e.ok("TYPE", k).(string)
	var b strings.Builder
	b.WriteString(typ + ":")
	switch typ {
	case "string":
		fmt.Fprintf(&b, "%q", e.ok("GET", k))
	case "hash":
		v := e.ok("HGETALL", k).([]any)
		var parts []string
		for i := 0; i+1 < len(v); i += 2 {
			parts = append(parts, fmt.Sprintf("%q=%q", v[i], v[i+1]))
		}
		sort.Strings(parts)
		b.WriteString(strings.Join(parts, " "))
	case "zset":
		v := e.ok("ZRANGE", k, "0", "-1", "WITHSCORES").([]any)
		for i := 0; i+1 < len(v); i += 2 {
			s, _ := strconv.ParseFloat(v[i+1].(string), 64)
			fmt.Fprintf(&b, " %q@%v", v[i], s)
		}
	default:
		b.WriteString("?")
	}
	return b.String()
}

// digest hashes the whole keyspace (see keyspace).
func (e *env) digest() string {
	e.t.Helper()
	return digestOf(e.keyspace(nil))
}

func digestOf(ks map[string]string) string {
	keys := make([]string, 0, len(ks))
	for k := range ks {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q %s\n", k, ks[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// isMintKey reports whether k is a mint key ({emq}:mint on emqd,
// emq:{q}:mint for the library).
func isMintKey(k string) bool {
	return k == "{emq}:mint" || (strings.HasPrefix(k, "emq:{") && strings.HasSuffix(k, "}:mint"))
}

// asMap turns a map reply (RESP3 map, or RESP2 flat name/value array) into
// a Go map, so replies compare regardless of entry order.
func asMap(t testing.TB, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch x := v.(type) {
	case map[any]any:
		for k, val := range x {
			out[fmt.Sprint(k)] = val
		}
	case map[string]any:
		return x
	case []any:
		if len(x)%2 != 0 {
			t.Fatalf("map reply with an odd length: %v", x)
		}
		for i := 0; i < len(x); i += 2 {
			out[fmt.Sprint(x[i])] = x[i+1]
		}
	default:
		t.Fatalf("not a map reply: %#v", v)
	}
	return out
}
