package server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/emqd/emqd/internal/testsupport"
)

func heapAllocs() (b, o uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// BenchmarkMemoryCycleAllocs is bench/cmd/compare's memory cycle in
// process, through real sockets: a backlog of 20,000 jobs, then 8 raw
// clients each sending EMQ.ENQUEUE and EMQ.CLAIM pipelined, then
// EMQ.COMPLETE, b.N cycles in all. It reports the heap bytes and objects
// allocated per cycle (runtime/metrics, the server's and the clients',
// which allocate next to nothing): what a collection's mark may keep
// as floating garbage. `go test ./server -run - -bench MemoryCycleAllocs
// -benchtime 200000x`: 652 B and 8.4 objects a cycle at 607a980, 585 B and
// 6.3 with the keyspace's row keys (bench/README.md "Memory during a job
// cycle (issue 25, round 8)").
func BenchmarkMemoryCycleAllocs(b *testing.B) {
	s := startServer(b, nil, nil)
	const clients, jobs = 8, 20000
	cycles := max(b.N/clients, 1) * clients
	var next atomic.Int64
	payload := bytes.Repeat([]byte("x"), 64)
	mk := func(id int64) string { return fmt.Sprintf("JOB%011d", id) }
	// The backlog.
	{
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(nc)
		for i := 0; i < jobs; i++ {
			nc.Write(encode("EMQ.ENQUEUE", "mem", mk(next.Add(1)), string(payload)))
			br.ReadSlice('\n') // $14
			br.ReadSlice('\n') // the id
		}
		nc.Close()
	}
	run := func(per int) {
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc, err := net.Dial("tcp", s.Addr())
				if err != nil {
					panic(err)
				}
				defer nc.Close()
				br := bufio.NewReaderSize(nc, 4096)
				var out []byte
				tok := make([]byte, 0, 64)
				idb := make([]byte, 0, 32)
				for i := 0; i < per; i++ {
					id := next.Add(1)
					idb = append(idb[:0], "JOB"...)
					var nb [20]byte
					s := strconv.AppendInt(nb[:0], id, 10)
					for k := len(s); k < 11; k++ {
						idb = append(idb, '0')
					}
					idb = append(idb, s...)
					out = out[:0]
					out = testsupport.AppendCommand(out, []byte("EMQ.ENQUEUE"), []byte("mem"), idb, payload)
					out = testsupport.AppendCommand(out, []byte("EMQ.CLAIM"), []byte("mem"), []byte("60000"))
					nc.Write(out)
					br.ReadSlice('\n') // $14
					br.ReadSlice('\n') // id
					// The claim: *1 *4 $len id $64 payload $len token :failures.
					br.ReadSlice('\n')
					br.ReadSlice('\n')
					br.ReadSlice('\n')
					cid, _ := br.ReadSlice('\n')
					cid = append(idb[:0], cid[:len(cid)-2]...)
					br.ReadSlice('\n')
					br.ReadSlice('\n')
					br.ReadSlice('\n')
					tl, _ := br.ReadSlice('\n')
					tok = append(tok[:0], tl[:len(tl)-2]...)
					br.ReadSlice('\n') // :attempts
					out = testsupport.AppendCommand(out[:0], []byte("EMQ.COMPLETE"), []byte("mem"), cid, tok)
					nc.Write(out)
					l, _ := br.ReadSlice('\n')
					if len(l) == 0 || l[0] != ':' {
						panic(fmt.Sprintf("EMQ.COMPLETE answered %q", l))
					}
				}
			}()
		}
		wg.Wait()
	}
	run(1000)
	runtime.GC()
	b.ResetTimer()
	b0, o0 := heapAllocs()
	run(cycles / clients)
	b1, o1 := heapAllocs()

	b.ReportMetric(float64(b1-b0)/float64(cycles), "B/cycle")
	b.ReportMetric(float64(o1-o0)/float64(cycles), "objects/cycle")
}
