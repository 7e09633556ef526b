package resp

import (
	"strings"
	"testing"
)

// BenchmarkParsePipeline64 parses one batch of 64 pipelined
// `HSET h field value` commands, the server's pipelined path without the
// network (b.N batches).
func BenchmarkParsePipeline64(b *testing.B) {
	batch := []byte(strings.Repeat("*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$5\r\nfield\r\n$5\r\nvalue\r\n", 64))
	var r Reader
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	for i := 0; i < b.N; i++ {
		r.Write(batch)
		cmds, err := r.Parse(0, false)
		if err != nil || len(cmds) != 64 {
			b.Fatalf("%d commands, %v", len(cmds), err)
		}
	}
}
