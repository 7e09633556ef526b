package server

import (
	"bufio"
	"net"
	"strconv"
	"testing"
)

// benchPipeline sends b.N commands in pipelines of depth over one
// connection and reads every reply.
func benchPipeline(b *testing.B, depth int, args ...string) {
	s := startServer(b, nil, nil)
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReaderSize(nc, 64<<10)
	var batch []byte
	for i := 0; i < depth; i++ {
		batch = append(batch, encode(args...)...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += depth {
		if _, err := nc.Write(batch); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < depth; i++ {
			line, err := br.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if line[0] == '$' {
				n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
				br.Discard(n + 2)
			}
		}
	}
}

func BenchmarkPingPipelined64(b *testing.B)         { benchPipeline(b, 64, "PING") }
func BenchmarkHSetPipelined64(b *testing.B)         { benchPipeline(b, 64, "HSET", "h", "field", "value") }
func BenchmarkHGetPipelined64(b *testing.B)         { benchPipeline(b, 64, "HGET", "h", "field") }
func BenchmarkPingUnpipelined(b *testing.B)         { benchPipeline(b, 1, "PING") }
func BenchmarkZPopMinEmptyPipelined64(b *testing.B) { benchPipeline(b, 64, "ZPOPMIN", "myzset") }
func BenchmarkZAddSamePipelined64(b *testing.B) {
	benchPipeline(b, 64, "ZADD", "myzset", "1804289383", "element:__rand_int__")
}
func BenchmarkHIncrByPipelined64(b *testing.B) { benchPipeline(b, 64, "HINCRBY", "h", "n", "1") }
