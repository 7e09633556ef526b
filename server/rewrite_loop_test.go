package server

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/emqd/emqd/clock"
)

// TestBGREWRITEAOFLoopDuringWrites runs BGREWRITEAOF back to back while
// writers change hashes, sorted sets and queues (under -race this covers
// every field a rewrite shares with the writers and with the next
// rewrite), then restarts and compares the whole keyspace; with the RDB
// preamble (the default) and without it.
func TestBGREWRITEAOFLoopDuringWrites(t *testing.T) {
	for _, pre := range []string{"yes", "no"} {
		t.Run("aof-use-rdb-preamble="+pre, func(t *testing.T) { rewriteLoop(t, pre) })
	}
}

func rewriteLoop(t *testing.T, preamble string) {
	dir := t.TempDir()
	clk := clock.NewManual(pt0)
	s := durable(t, dir, clk, "appendfsync", "everysec", "aof-use-rdb-preamble", preamble)
	ctx := context.Background()
	var wg sync.WaitGroup
	stopW := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := rclient(t, s, 0)
			for i := 0; ; i++ {
				select {
				case <-stopW:
					return
				default:
				}
				k := fmt.Sprintf("w%d:%d", w, i%50)
				for _, args := range [][]any{
					{"HSET", k, "f", i},
					{"ZADD", "z" + k, i, fmt.Sprint(i)},
					{"EMQ.ENQUEUE", fmt.Sprintf("q%d", w), "*", fmt.Sprint(i)},
					{"EMQ.CLAIM", fmt.Sprintf("q%d", w), 30000},
				} {
					if err := c.Do(ctx, args...).Err(); err != nil && err.Error() != "redis: nil" {
						t.Errorf("%v: %v", args, err)
						return
					}
				}
				if i%7 == 0 {
					c.Del(ctx, k)
				}
			}
		}()
	}
	c := rclient(t, s, 0)
	started := 0
	for started < 25 {
		err := c.Do(ctx, "BGREWRITEAOF").Err()
		switch {
		case err == nil:
			started++
		case strings.Contains(err.Error(), "already in progress"):
		default:
			t.Fatal(err)
		}
	}
	close(stopW)
	wg.Wait()
	waitRewrite(t, c)
	if v := infoField(t, c, "aof_last_bgrewrite_status"); v != "ok" {
		t.Fatalf("aof_last_bgrewrite_status %s", v)
	}
	want := keyspace(s)
	stop(t, s)
	s2 := durable(t, dir, clk)
	if got := keyspace(s2); !reflect.DeepEqual(got, want) {
		t.Fatalf("keyspace after restart differs: %d keys, want %d", len(got), len(want))
	}
}
