package server

import (
	"strings"
	"testing"
)

// Pub/Sub (docs/compat.md §1.9): what the differential test against Redis
// 7.0 cannot check (Valkey 8's NOSUB, CLIENT LIST and INFO fields), and
// subscriptions ending with the connection or RESET.
func TestPubSub(t *testing.T) {
	s := startServer(t, nil, nil)
	c1, c2 := dial(t, s), dial(t, s)
	steps(t, c1,
		"UNSUBSCRIBE", "-NOSUB 'unsubscribe' command executed not in subscribed mode\r\n",
		"PUNSUBSCRIBE x", "-NOSUB 'punsubscribe' command executed not in subscribed mode\r\n",
		"MULTI", "+OK\r\n",
		"UNSUBSCRIBE", "-NOSUB 'unsubscribe' command executed not in subscribed mode\r\n",
		"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n",
		"SUBSCRIBE ch1 ch2", "*3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n")
	expectFrames(t, c1, "*3\r\n$9\r\nsubscribe\r\n$3\r\nch2\r\n:2\r\n")
	steps(t, c1, "PSUBSCRIBE p*", "*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:3\r\n",
		"CLIENT ID", "-ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n")
	if r := c2.Do("CLIENT", "LIST", "TYPE", "pubsub"); strings.Count(r, " addr=") != 1 || !strings.Contains(r, " flags=P ") ||
		!strings.Contains(r, " sub=2 psub=1 ") {
		t.Fatalf("CLIENT LIST TYPE pubsub %q", r)
	}
	if r := c2.Do("CLIENT", "LIST", "TYPE", "normal"); strings.Count(r, " addr=") != 1 || !strings.Contains(r, " sub=0 psub=0 ") {
		t.Fatalf("CLIENT LIST TYPE normal %q", r)
	}
	r := s.InfoText("clients", "stats")
	for _, want := range []string{"pubsub_clients:1\r\n", "pubsub_channels:2\r\n", "pubsub_patterns:1\r\n"} {
		if !strings.Contains(r, want) {
			t.Fatalf("INFO lacks %q: %q", want, r)
		}
	}
	steps(t, c2, "PUBLISH ch1 m", ":1\r\n", "PUBLISH pq m", ":1\r\n")
	expectFrames(t, c1, "*3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$1\r\nm\r\n", "*4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npq\r\n$1\r\nm\r\n")
	// RESET ends every subscription without a frame.
	steps(t, c1, "RESET", "+RESET\r\n")
	if r := c1.Do("CLIENT", "INFO"); !strings.Contains(r, " flags=N ") || !strings.Contains(r, " sub=0 psub=0 ") {
		t.Fatalf("CLIENT INFO after RESET %q", r)
	}
	steps(t, c2, "PUBLISH ch1 m", ":0\r\n", "PUBSUB NUMPAT", ":0\r\n")
	// A closed connection's subscriptions go with it.
	c3 := dial(t, s)
	steps(t, c3, "SUBSCRIBE gone", "*3\r\n$9\r\nsubscribe\r\n$4\r\ngone\r\n:1\r\n")
	steps(t, c2, "PUBSUB NUMSUB gone", "*2\r\n$4\r\ngone\r\n:1\r\n")
	c3.NC.Close()
	waitClients(t, s, 2)
	steps(t, c2, "PUBSUB NUMSUB gone", "*2\r\n$4\r\ngone\r\n:0\r\n", "PUBLISH gone x", ":0\r\n")
	if r := s.InfoText("clients"); !strings.Contains(r, "pubsub_clients:0\r\n") {
		t.Fatalf("INFO clients %q", r)
	}
}
