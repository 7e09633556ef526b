package verbs

import "testing"

// TestParseQueueKey: every queue key NewKeys names parses back to its queue
// and part; job rows, the mint key, other tags and invalid names do not.
func TestParseQueueKey(t *testing.T) {
	k := NewKeys("mail.high-1")
	for key, part := range map[string]string{
		k.Pending: PartPending, k.Active: PartActive, k.Schedule: PartSchedule, k.Dead: PartDead,
		k.Completed: PartCompleted, k.Failed: PartFailed, k.Meta: PartMeta,
	} {
		q, p, ok := ParseQueueKey(key)
		if !ok || q != "mail.high-1" || p != part {
			t.Errorf("ParseQueueKey(%q) = %q, %q, %v", key, q, p, ok)
		}
	}
	for _, key := range []string{
		k.Row("JOB00000000001"), MintKey, "emq:{}:active", "emq:{a b}:active", "emq:{emq}:active",
		"emq:{q}:active:x", "emq:{q}:metrics", "x:{q}:active", "emq:{q}active", "emq:{a}:b}:active",
	} {
		if q, p, ok := ParseQueueKey(key); ok {
			t.Errorf("ParseQueueKey(%q) = %q, %q, true", key, q, p)
		}
	}
}
