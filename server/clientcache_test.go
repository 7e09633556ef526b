package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/emqd/emqd/server"
)

// The Valkey project's Go client (valkey-go) and rueidis with their
// DEFAULT options: both turn client-side caching on at connect (HELLO 3,
// CLIENT TRACKING ON OPTIN) and DoCache reads go through CLIENT CACHING
// YES + MULTI/PTTL/<read>/EXEC. A cached HGET / ZRANGE / HGETALL is served
// from the client's cache the second time (the client's IsCacheHit, and
// the server's command stats did not move), and is read again from the
// server after another client writes the key, after EMQ.COMPLETE deletes
// the job row, and after FLUSHALL (docs/compat.md §1.8).

// cacheClient is what the scenario needs of either library.
type cacheClient struct {
	hget    func(ctx context.Context, key, field string) (string, bool, error)
	zrange  func(ctx context.Context, key string) ([]string, bool, error)
	hgetall func(ctx context.Context, key string) (map[string]string, bool, error)
	// get is an uncached-before DoCache GET: a round trip on the
	// connection that caches the keys of key's slot (both libraries pick
	// the connection of a cached read by slot), so an invalidation the
	// server queued before another client's reply is handled by then.
	get func(ctx context.Context, key string) error
}

func TestValkeyGoDefaultsClientSideCaching(t *testing.T) {
	s := server.StartTest(t)
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr()}})
	if err != nil {
		t.Fatalf("valkey-go with default options: %v", err)
	}
	t.Cleanup(c.Close)
	const ttl = time.Minute
	runCacheScenario(t, s, cacheClient{
		hget: func(ctx context.Context, k, f string) (string, bool, error) {
			r := c.DoCache(ctx, c.B().Hget().Key(k).Field(f).Cache(), ttl)
			v, err := r.ToString()
			if valkey.IsValkeyNil(err) {
				err = nil
			}
			return v, r.IsCacheHit(), err
		},
		zrange: func(ctx context.Context, k string) ([]string, bool, error) {
			r := c.DoCache(ctx, c.B().Zrange().Key(k).Min("0").Max("-1").Cache(), ttl)
			v, err := r.AsStrSlice()
			return v, r.IsCacheHit(), err
		},
		hgetall: func(ctx context.Context, k string) (map[string]string, bool, error) {
			r := c.DoCache(ctx, c.B().Hgetall().Key(k).Cache(), ttl)
			v, err := r.AsStrMap()
			return v, r.IsCacheHit(), err
		},
		get: func(ctx context.Context, k string) error {
			err := c.DoCache(ctx, c.B().Get().Key(k).Cache(), ttl).Error()
			if valkey.IsValkeyNil(err) {
				return nil
			}
			return err
		},
	})
}

func TestRueidisDefaultsClientSideCaching(t *testing.T) {
	s := server.StartTest(t)
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}})
	if err != nil {
		t.Fatalf("rueidis with default options: %v", err)
	}
	t.Cleanup(c.Close)
	const ttl = time.Minute
	runCacheScenario(t, s, cacheClient{
		hget: func(ctx context.Context, k, f string) (string, bool, error) {
			r := c.DoCache(ctx, c.B().Hget().Key(k).Field(f).Cache(), ttl)
			v, err := r.ToString()
			if rueidis.IsRedisNil(err) {
				err = nil
			}
			return v, r.IsCacheHit(), err
		},
		zrange: func(ctx context.Context, k string) ([]string, bool, error) {
			r := c.DoCache(ctx, c.B().Zrange().Key(k).Min("0").Max("-1").Cache(), ttl)
			v, err := r.AsStrSlice()
			return v, r.IsCacheHit(), err
		},
		hgetall: func(ctx context.Context, k string) (map[string]string, bool, error) {
			r := c.DoCache(ctx, c.B().Hgetall().Key(k).Cache(), ttl)
			v, err := r.AsStrMap()
			return v, r.IsCacheHit(), err
		},
		get: func(ctx context.Context, k string) error {
			err := c.DoCache(ctx, c.B().Get().Key(k).Cache(), ttl).Error()
			if rueidis.IsRedisNil(err) {
				return nil
			}
			return err
		},
	})
}

// calls is the server's count of cmd (INFO commandstats).
func calls(t *testing.T, s *server.Server, cmd string) string {
	t.Helper()
	for _, line := range strings.Split(s.InfoText("commandstats"), "\r\n") {
		if v, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			return v[:strings.IndexByte(v, ',')]
		}
	}
	return "0"
}

func runCacheScenario(t *testing.T, s *server.Server, c cacheClient) {
	ctx := context.Background()
	other := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { other.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(other.HSet(ctx, "user:1", "name", "Ada").Err())
	must(other.ZAdd(ctx, "board", redis.Z{Score: 10, Member: "ada"}, redis.Z{Score: 7, Member: "bob"}).Err())

	hget := func(want string, wantHit bool) {
		t.Helper()
		v, hit, err := c.hget(ctx, "user:1", "name")
		if err != nil || v != want || hit != wantHit {
			t.Fatalf("HGET user:1 name: %q hit=%v err=%v, want %q hit=%v", v, hit, err, want, wantHit)
		}
	}
	zrange := func(want string, wantHit bool) {
		t.Helper()
		v, hit, err := c.zrange(ctx, "board")
		if err != nil || strings.Join(v, ",") != want || hit != wantHit {
			t.Fatalf("ZRANGE board: %q hit=%v err=%v, want %q hit=%v", v, hit, err, want, wantHit)
		}
	}
	// sync makes a round trip on the connection caching the keys tagged
	// tag (a fresh key each time: never a cache hit).
	n := 0
	sync := func(tags ...string) {
		t.Helper()
		for _, tag := range tags {
			n++
			must(c.get(ctx, "{"+tag+"}:sync:"+strconv.Itoa(n)))
		}
	}

	// Cached the second time: a hit, and the server saw one HGET.
	hget("Ada", false)
	before := calls(t, s, "hget")
	hget("Ada", true)
	if after := calls(t, s, "hget"); after != before {
		t.Fatalf("a cache hit reached the server: hget calls %s -> %s", before, after)
	}
	zrange("bob,ada", false)
	zrange("bob,ada", true)
	if r := s.InfoText("clients"); strings.Contains(r, "tracking_clients:0\r\n") {
		t.Fatalf("INFO clients: %q", r)
	}

	// Another client writes: refreshed.
	must(other.HSet(ctx, "user:1", "name", "Grace").Err())
	must(other.ZAdd(ctx, "board", redis.Z{Score: 1, Member: "cy"}).Err())
	sync("user:1", "board")
	hget("Grace", false)
	hget("Grace", true)
	zrange("cy,bob,ada", false)
	zrange("cy,bob,ada", true)

	// EMQ.COMPLETE deletes the job row the client cached.
	id, err := other.Do(ctx, "EMQ.ENQUEUE", "mail", "*", "hello").Text()
	must(err)
	row := "emq:{mail}:job:" + id
	got, hit, err := c.hgetall(ctx, row)
	if err != nil || hit || got["payload"] == "" {
		t.Fatalf("HGETALL %s: %v hit=%v err=%v", row, got, hit, err)
	}
	if got, hit, err = c.hgetall(ctx, row); err != nil || !hit || got["state"] != "pending" {
		t.Fatalf("HGETALL %s (cached): %v hit=%v err=%v", row, got, hit, err)
	}
	claim, err := other.Do(ctx, "EMQ.CLAIM", "mail", "30000").Slice()
	must(err)
	epoch := claim[0].([]any)[2]
	must(other.Do(ctx, "EMQ.COMPLETE", "mail", id, epoch).Err())
	sync("mail")
	if got, hit, err = c.hgetall(ctx, row); err != nil || hit || len(got) != 0 {
		t.Fatalf("HGETALL %s after EMQ.COMPLETE: %v hit=%v err=%v", row, got, hit, err)
	}

	// FLUSHALL: everything cached is dropped.
	hget("Grace", true)
	must(other.FlushAll(ctx).Err())
	sync("user:1", "board")
	hget("", false)
	zrange("", false)
	zrange("", true)
}
