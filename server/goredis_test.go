package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/emqd/emqd/internal/testsupport"
)

func newGoRedis(t *testing.T, s *Server, opt *redis.Options) *redis.Client {
	t.Helper()
	if opt == nil {
		opt = &redis.Options{}
	}
	opt.Addr = s.Addr()
	if opt.ReadTimeout == 0 {
		opt.ReadTimeout, opt.WriteTimeout = testsupport.ClientTimeout, testsupport.ClientTimeout
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestGoRedisRESP3Handshake: go-redis v9's default handshake (HELLO 3,
// CLIENT SETINFO) succeeds and the connection speaks RESP3.
func TestGoRedisRESP3Handshake(t *testing.T) {
	s := startServer(t, nil, nil)
	ctx := context.Background()
	c := newGoRedis(t, s, &redis.Options{Protocol: 3, ClientName: "worker-1"})
	if err := c.HSet(ctx, "h", "a", "1", "b", "2").Err(); err != nil {
		t.Fatal(err)
	}
	m, err := c.HGetAll(ctx, "h").Result()
	if err != nil || m["a"] != "1" || m["b"] != "2" || len(m) != 2 {
		t.Fatalf("HGETALL %v %v", m, err)
	}
	info, err := c.ClientInfo(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if info.Resp != 3 || info.Name != "worker-1" || !strings.HasPrefix(info.LibName, "go-redis(") || info.LibVer == "" {
		t.Fatalf("client info %+v", info)
	}
	// RESP3 doubles come back as floats.
	c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m"})
	if sc, err := c.ZScore(ctx, "z", "m").Result(); err != nil || sc != 1.5 {
		t.Fatalf("ZSCORE %v %v", sc, err)
	}
	// RESP2 works as well.
	c2 := newGoRedis(t, s, &redis.Options{Protocol: 2})
	if v, err := c2.HGet(ctx, "h", "b").Result(); err != nil || v != "2" {
		t.Fatalf("RESP2 HGET %q %v", v, err)
	}
	hello, err := c2.Do(ctx, "HELLO").Result()
	if err != nil {
		t.Fatal(err)
	}
	if arr, ok := hello.([]any); !ok || len(arr) != 14 || arr[1] != "emqd" || arr[3] != "8.0.1" || arr[5] != int64(2) {
		t.Fatalf("HELLO under RESP2: %#v", hello)
	}
}

func TestGoRedisPipeline(t *testing.T) {
	s := startServer(t, nil, nil)
	ctx := context.Background()
	c := newGoRedis(t, s, nil)
	p := c.Pipeline()
	for i := 0; i < 100; i++ {
		p.HIncrBy(ctx, "counter", "n", 1)
	}
	get := p.HGet(ctx, "counter", "n")
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if get.Val() != "100" {
		t.Fatalf("after 100 pipelined HINCRBY: %q", get.Val())
	}
}

func TestGoRedisTxPipeline(t *testing.T) {
	s := startServer(t, nil, nil)
	ctx := context.Background()
	c := newGoRedis(t, s, nil)
	var incr *redis.IntCmd
	var wrong *redis.IntCmd
	c.Set(ctx, "str", "x", 0)
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.HIncrBy(ctx, "tx", "n", 5)
		wrong = p.HIncrBy(ctx, "str", "n", 1)
		return nil
	})
	if len(cmds) != 2 || incr.Val() != 5 {
		t.Fatalf("tx: %v %v", cmds, err)
	}
	if wrong.Err() == nil || !strings.HasPrefix(wrong.Err().Error(), "WRONGTYPE") {
		t.Fatalf("runtime error inside EXEC: %v", wrong.Err())
	}
}

// TestGoRedisWatchConflict: a WATCHed key written by another client makes
// EXEC fail (TxFailedErr); retrying succeeds.
func TestGoRedisWatchConflict(t *testing.T) {
	s := startServer(t, nil, nil)
	ctx := context.Background()
	c := newGoRedis(t, s, nil)
	other := newGoRedis(t, s, nil)
	c.HSet(ctx, "acct", "bal", 10)
	attempts := 0
	txf := func(tx *redis.Tx) error {
		attempts++
		n, err := tx.HGet(ctx, "acct", "bal").Int()
		if err != nil {
			return err
		}
		if attempts == 1 {
			other.HIncrBy(ctx, "acct", "bal", 100) // conflicting write
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, "acct", "bal", n+1)
			return nil
		})
		return err
	}
	err := c.Watch(ctx, txf, "acct")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("first attempt: %v", err)
	}
	if err := c.Watch(ctx, txf, "acct"); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.HGet(ctx, "acct", "bal").Result(); v != "111" {
		t.Fatalf("balance %q", v)
	}
}

func TestGoRedisSelectDB(t *testing.T) {
	s := startServer(t, nil, nil)
	ctx := context.Background()
	c0 := newGoRedis(t, s, nil)
	c3 := newGoRedis(t, s, &redis.Options{DB: 3})
	c3.Set(ctx, "k", "three", 0)
	if err := c0.Get(ctx, "k").Err(); err != redis.Nil {
		t.Fatalf("db0 sees db3's key: %v", err)
	}
	if v := c3.Get(ctx, "k").Val(); v != "three" {
		t.Fatalf("db3: %q", v)
	}
	info := c0.Info(ctx, "keyspace").Val()
	if !strings.Contains(info, "db3:keys=1,expires=0,avg_ttl=0") || strings.Contains(info, "db0:") {
		t.Fatalf("keyspace %q", info)
	}
	if err := newGoRedis(t, s, &redis.Options{DB: 16}).Ping(ctx).Err(); err == nil || err.Error() != "ERR DB index is out of range" {
		t.Fatalf("DB 16: %v", err)
	}
}

func TestGoRedisAuth(t *testing.T) {
	s := startServer(t, map[string]string{"requirepass": "s3cret"}, nil)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		noPw := newGoRedis(t, s, &redis.Options{Protocol: proto})
		if err := noPw.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
			t.Fatalf("proto %d without password: %v", proto, err)
		}
		bad := newGoRedis(t, s, &redis.Options{Protocol: proto, Password: "nope"})
		if err := bad.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Fatalf("proto %d wrong password: %v", proto, err)
		}
		good := newGoRedis(t, s, &redis.Options{Protocol: proto, Password: "s3cret"})
		if err := good.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("proto %d with password: %v", proto, err)
		}
	}
}

// TestGoRedisConcurrentClients runs many clients at once (race detector).
func TestGoRedisConcurrentClients(t *testing.T) {
	s := startServer(t, nil, nil)
	ctx := context.Background()
	c := newGoRedis(t, s, &redis.Options{PoolSize: 16})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if err := c.HIncrBy(ctx, "h", "n", 1).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := c.HGet(ctx, "h", "n").Val(); v != "1600" {
		t.Fatalf("n = %q", v)
	}
}
