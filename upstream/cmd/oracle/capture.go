package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/go-logr/logr"
	fwk "k8s.io/kube-scheduler/framework"
)

// capture is a logr sink keeping, per pod, the scheduler's V(10) score lines, the preemption
// evaluator's V(2) lines (its chosen node; the end of the asynchronous victim deletion) and the
// queue's V(4) line for a PreEnqueue plugin that holds the pod back.
type capture struct {
	mu        sync.Mutex
	scores    map[string]map[string]map[string]int // pod -> node -> plugin -> weighted score
	totals    map[string]map[string]int            // pod -> node -> total
	preempted map[string]string                    // preemptor -> node chosen for preemption
	finished  map[string]bool                      // preemptor -> its victims' deletion finished
	started   map[string]bool                      // preemptor -> its victims' deletion began
	skipped   map[string]int                       // preemptor -> victims already terminating (no call)
	gated     map[string]string                    // pod -> "plugin: message" of the PreEnqueue plugin holding it
	updates   map[string]int                       // pod -> update events the scheduler handled for it, unscheduled
}

func newCapture() *capture {
	return &capture{
		scores:    map[string]map[string]map[string]int{},
		totals:    map[string]map[string]int{},
		preempted: map[string]string{},
		finished:  map[string]bool{},
		started:   map[string]bool{},
		skipped:   map[string]int{},
		gated:     map[string]string{},
		updates:   map[string]int{},
	}
}

func (c *capture) Init(logr.RuntimeInfo)          {}
func (c *capture) Enabled(level int) bool         { return level <= 10 }
func (c *capture) Error(error, string, ...any)    {}
func (c *capture) WithValues(...any) logr.LogSink { return c }
func (c *capture) WithName(string) logr.LogSink   { return c }

func (c *capture) Info(_ int, msg string, kv ...any) {
	if os.Getenv("ORACLE_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, msg, kv)
	}
	values := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			values[k] = kv[i+1]
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch msg {
	case "Calculated node's final score for pod":
		pod, node := fmt.Sprint(values["pod"]), fmt.Sprint(values["node"])
		if c.totals[pod] == nil {
			c.totals[pod] = map[string]int{}
		}
		c.totals[pod][node] = toInt(values["score"])
	case "Plugin scored node for pod":
		pod, node := fmt.Sprint(values["pod"]), fmt.Sprint(values["node"])
		if c.scores[pod] == nil {
			c.scores[pod] = map[string]map[string]int{}
		}
		if c.scores[pod][node] == nil {
			c.scores[pod][node] = map[string]int{}
		}
		c.scores[pod][node][fmt.Sprint(values["plugin"])] = toInt(values["score"])
	case "the target node for the preemption is determined":
		c.preempted[fmt.Sprint(values["pod"])] = fmt.Sprint(values["node"])
	case "Status after running PreEnqueue plugin":
		if status, ok := values["status"].(*fwk.Status); ok {
			c.gated[fmt.Sprint(values["pod"])] = fmt.Sprint(values["plugin"]) + ": " + status.Message()
		}
	case "Update event for unscheduled pod":
		c.updates[fmt.Sprint(values["pod"])]++
	case "Async Preemption finished completely":
		c.finished[fmt.Sprint(values["preemptor"])] = true
	case "Start the preemption asynchronously":
		c.started[fmt.Sprint(values["preemptor"])] = true
	case "Victim Pod is already being deleted, skipping the API call for it":
		c.skipped[fmt.Sprint(values["preemptor"])]++
	}
}

// reset drops everything logged for the pod.
func (c *capture) reset(pod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.scores, pod)
	delete(c.totals, pod)
	delete(c.preempted, pod)
	delete(c.finished, pod)
	delete(c.started, pod)
	delete(c.skipped, pod)
	delete(c.gated, pod)
}

// forget drops what an earlier attempt for the pod logged, so that the scores are the last attempt's.
func (c *capture) forget(pod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.scores, pod)
	delete(c.totals, pod)
}

func toInt(v any) int {
	switch n := v.(type) {
	case int64:
		return int(n)
	case int:
		return n
	case int32:
		return int(n)
	}
	return 0
}

// updated reports how many update events of the unscheduled pod the scheduler has handled.
func (c *capture) updated(pod string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.updates[pod]
}

// gating says which PreEnqueue plugin holds the pod back and why, or "".
func (c *capture) gating(pod string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gated[pod]
}
