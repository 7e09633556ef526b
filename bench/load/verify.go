package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// toMap reads a RESP3 map or a RESP2 flat name/value array.
func toMap(v any) (map[string]any, error) {
	out := map[string]any{}
	switch m := v.(type) {
	case map[any]any:
		for k, x := range m {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %T", k)
			}
			out[ks] = x
		}
	case []any:
		if len(m)%2 != 0 {
			return nil, fmt.Errorf("odd flat map of %d", len(m))
		}
		for i := 0; i < len(m); i += 2 {
			ks, ok := m[i].(string)
			if !ok {
				return nil, fmt.Errorf("map key %T", m[i])
			}
			out[ks] = m[i+1]
		}
	default:
		return nil, fmt.Errorf("not a map: %T", v)
	}
	return out, nil
}

// counts is EMQ.COUNTS summed over the run's queues.
func (d *driver) counts(ctx context.Context) (map[string]int64, error) {
	sum := map[string]int64{}
	for _, q := range d.queues {
		c, err := d.countsOf(ctx, q)
		if err != nil {
			return nil, err
		}
		for k, v := range c {
			sum[k] += v
		}
	}
	return sum, nil
}

// countsOf is EMQ.COUNTS of queue q.
func (d *driver) countsOf(ctx context.Context, q string) (map[string]int64, error) {
	v, err := d.rdb.Do(ctx, d.argv("EMQ.COUNTS", q)...).Result()
	if err != nil {
		return nil, err
	}
	m, err := toMap(v)
	if err != nil {
		return nil, fmt.Errorf("EMQ.COUNTS: %w", err)
	}
	out := map[string]int64{}
	for _, k := range []string{"pending", "active", "scheduled", "dead", "completed", "failed"} {
		n, ok := m[k].(int64)
		if !ok {
			return nil, fmt.Errorf("EMQ.COUNTS: %s is %T %v", k, m[k], m[k])
		}
		out[k] = n
	}
	return out, nil
}

// verify checks every job against its row (see the package doc) and the
// queue against EMQ.COUNTS, and fills in the Result.
func (d *driver) verify(ctx context.Context) (*Result, error) {
	r := &Result{Queue: d.cfg.Queue, Queues: d.queues}
	perQueue := map[string]map[string]int64{} // the jobs' outcomes per queue
	d.mu.RLock()
	all := slices.Clone(d.all)
	d.mu.RUnlock()
	note := func(list *[]string, n *int, id string) {
		*n++
		if len(*list) < 20 {
			*list = append(*list, id)
		}
	}
	var problems []string
	const batch = 500
	for i := 0; i < len(all); i += batch {
		part := all[i:min(i+batch, len(all))]
		var cmds []*redis.Cmd
		_, err := d.retryPipe(ctx, func(p redis.Pipeliner) {
			cmds = cmds[:0]
			for _, j := range part {
				cmds = append(cmds, p.Do(ctx, d.argv("EMQ.JOB", j.q, j.id)...))
			}
		})
		if err != nil {
			return nil, fmt.Errorf("load: verify: EMQ.JOB: %w", err)
		}
		for k, j := range part {
			j.mu.Lock()
			acked, gone, admitted, unadmit := j.acked, j.gone, j.admitted, j.unadmitEr
			j.mu.Unlock()
			if admitted {
				r.Enqueued++
			}
			if perQueue[j.q] == nil {
				perQueue[j.q] = map[string]int64{}
			}
			outcome := perQueue[j.q]
			v, err := cmds[k].Result()
			if errors.Is(err, redis.Nil) {
				switch {
				case acked > 1:
					note(&r.Duplicates, &r.NDuplicates, j.id)
					r.Completed++
					outcome["completed"]++
				case acked == 1 || gone > 0:
					r.Completed++
					outcome["completed"]++
				default:
					note(&r.Lost, &r.NLost, j.id)
					if unadmit != "" {
						problems = append(problems, fmt.Sprintf("job %s: %s", j.id, unadmit))
					}
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("load: verify: EMQ.JOB %s: %w", j.id, err)
			}
			row, err := toMap(v)
			if err != nil {
				return nil, fmt.Errorf("load: verify: EMQ.JOB %s: %w", j.id, err)
			}
			state, _ := row["state"].(string)
			reason, _ := row["last_error"].(string)
			switch {
			case state == "dead" && reason != "":
				r.Dead++
				outcome["dead"]++
				if acked > 0 {
					problems = append(problems, fmt.Sprintf("job %s: COMPLETE answered 1 but the row is dead", j.id))
				}
			case state == "dead":
				note(&r.LeftOver, &r.NLeftOver, j.id)
				problems = append(problems, fmt.Sprintf("job %s: dead without a last_error", j.id))
			default:
				note(&r.LeftOver, &r.NLeftOver, j.id)
				if acked > 0 {
					problems = append(problems, fmt.Sprintf("job %s: COMPLETE answered 1 but the row is back in state %s", j.id, state))
				}
			}
		}
	}
	counts, err := d.counts(ctx)
	if err != nil {
		return nil, fmt.Errorf("load: verify: %w", err)
	}
	r.Counts = counts
	if len(d.queues) > 1 {
		// Every queue's own counts agree with its jobs.
		for _, q := range d.queues {
			c, err := d.countsOf(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("load: verify: %w", err)
			}
			o := perQueue[q]
			if c["pending"]+c["active"]+c["scheduled"] != 0 || c["completed"] != o["completed"] || c["dead"] != o["dead"] || c["failed"] != o["dead"] {
				problems = append(problems, fmt.Sprintf("queue %s: EMQ.COUNTS %v, the jobs say %d completed, %d dead", q, c, o["completed"], o["dead"]))
			}
		}
	}
	for _, k := range []string{"pending", "active", "scheduled"} {
		if counts[k] != 0 {
			problems = append(problems, fmt.Sprintf("EMQ.COUNTS %s is %d, want 0", k, counts[k]))
		}
	}
	if counts["completed"] != int64(r.Completed) {
		problems = append(problems, fmt.Sprintf("EMQ.COUNTS completed is %d, the jobs say %d", counts["completed"], r.Completed))
	}
	if counts["dead"] != int64(r.Dead) || counts["failed"] != int64(r.Dead) {
		problems = append(problems, fmt.Sprintf("EMQ.COUNTS dead %d failed %d, the jobs say %d dead", counts["dead"], counts["failed"], r.Dead))
	}
	if r.Enqueued != len(all) {
		problems = append(problems, fmt.Sprintf("%d of %d jobs had no confirmed admission", len(all)-r.Enqueued, len(all)))
	}
	d.probMu.Lock()
	r.Problems = append(slices.Clone(d.problems), problems...)
	d.probMu.Unlock()

	r.Failed, r.Crashes, r.Stale = d.failed.Load(), d.crashes.Load(), d.stale.Load()
	r.Recovered, r.StallDead, r.Extends = d.recovered.Load(), d.stallDead.Load(), d.extends.Load()
	r.CompletedLostReply, r.DupAdmissions = d.lostReplyCompletions.Load(), d.dupAdmissions.Load()
	r.Restarts = int(d.restarts.Load())
	r.Elapsed = time.Duration(d.lastDoneNs.Load())
	if r.Elapsed > 0 {
		r.JobsPerSec = float64(r.Completed+r.Dead) / r.Elapsed.Seconds()
	}
	d.latMu.Lock()
	lat := slices.Clone(d.lat)
	d.latMu.Unlock()
	slices.Sort(lat)
	r.P50, r.P99, r.P999 = percentile(lat, 0.50), percentile(lat, 0.99), percentile(lat, 0.999)
	return r, nil
}

// percentile is the nearest-rank percentile of sorted durations (0 if none).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// retryPipe runs a pipeline built by fill, resending it through transport
// errors for RetryFor. It returns the first transport error if it gives up.
func (d *driver) retryPipe(ctx context.Context, fill func(redis.Pipeliner)) ([]redis.Cmder, error) {
	var cmds []redis.Cmder
	_, err := d.retry(func() error {
		p := d.rdb.Pipeline()
		fill(p)
		var err error
		cmds, err = p.Exec(ctx)
		for _, c := range cmds {
			if e := c.Err(); e != nil && !isReply(e) {
				return e
			}
		}
		if err != nil && !isReply(err) {
			return err
		}
		return nil
	})
	if err != nil && !isReply(err) {
		return nil, err
	}
	return cmds, nil
}
