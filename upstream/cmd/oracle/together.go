package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler"
	testingclock "k8s.io/utils/clock/testing"
)

// rounds bounds the backoffs a run steps the clock past (a gang that never fits retries after
// every backoff; its outcome is the same each time).
const rounds = 4

// groupCondition is a PodGroup's PodGroupInitiallyScheduled condition.
type groupCondition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// together creates every pending pod at once and lets the scheduler take them in its queue's
// order (a PodGroup's pods as one entity: the pod group cycle) until none is left to try, the
// clock stepped past each backoff a few times; each pod's outcome is its node, or its last
// FailedScheduling message, with its PodGroup's condition.
func together(ctx context.Context, sched *scheduler.Scheduler, clock *testingclock.FakeClock, client *fake.Clientset, sink *capture, seen *outcomes, deleted *deletions, pending []*v1.Pod) ([]result, error) {
	queued := func() int {
		active, _ := sched.SchedulingQueue.PendingPods()
		return len(active) + len(sched.SchedulingQueue.PendingPodGroupPods()) + len(sched.SchedulingQueue.IncompletePodGroupPodsPods())
	}
	for i, pod := range pending {
		sink.reset(pod.Namespace + "/" + pod.Name) // an earlier file's pod of the same name
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		// the pod reached the queue (its informer event was handled) before the next is made, a
		// millisecond later: queue timestamps follow the file's order, as creation times would in
		// a cluster (with the clock standing still, equal timestamps leave the order to the heap)
		if err := waitFor(func() bool { return queued() >= i+1 }); err != nil {
			return nil, fmt.Errorf("%s/%s never reached the queue", pod.Namespace, pod.Name)
		}
		clock.Step(time.Millisecond)
	}
	for round := 0; round < rounds; {
		tracef("round %d active=%d backoff=%d unsched=%d terminating=%d", round, len(sched.SchedulingQueue.PodsInActiveQ()), len(sched.SchedulingQueue.PodsInBackoffQ()), len(sched.SchedulingQueue.UnschedulablePods()), deleted.terminations())
		if len(sched.SchedulingQueue.PodsInActiveQ()) == 0 {
			if len(sched.SchedulingQueue.PodsInBackoffQ()) == 0 {
				if busy, _ := deleted.pending(sched); !busy {
					tracef("nothing queued, nothing terminating: done")
					break
				}
				// nothing to try while victims terminate: their kubelets end them (after the
				// scheduler has seen them terminating), which queues what they blocked
				_ = waitFor(func() bool { _, seen := deleted.pending(sched); return seen })
				tracef("finishing terminations")
				if err := deleted.finish(); err != nil {
					return nil, err
				}
				round++
				_ = waitFor(func() bool {
					return len(sched.SchedulingQueue.PodsInActiveQ())+len(sched.SchedulingQueue.PodsInBackoffQ()) > 0
				})
				continue
			}
			// past the longest backoff; terminations end when their grace period has passed. A step
			// taken while victims terminate is not a round: whether the preemptors wait in backoff
			// or as unschedulable then is a race in upstream (an update arriving while the
			// preemption goroutine runs moves them to backoff), and the terminations end in a
			// bounded number of steps either way
			terminating := deleted.terminations() > 0
			tracef("stepping past backoff (terminating: %v)", terminating)
			if err := deleted.step(maxBackoff); err != nil {
				return nil, err
			}
			if !terminating {
				round++
			}
			_ = waitFor(func() bool { return len(sched.SchedulingQueue.PodsInActiveQ()) > 0 })
			continue
		}
		before := seen.total()
		sched.ScheduleOne(ctx)
		// the cycle's outcomes (and its bindings) have been recorded once no more arrive
		_ = waitFor(func() bool { return seen.total() > before })
		settle(seen)
	}
	victims := deleted.take()
	var results []result
	for _, pod := range pending {
		key := pod.Namespace + "/" + pod.Name
		out := result{Pod: key}
		got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out.Node = got.Spec.NodeName
		out.Victims = victims
		out.Messages = seen.failures(key)
		if out.Node == "" {
			if e := seen.last(key); e != nil {
				out.Message = e.Note
			} else {
				out.Gated = sink.gating(key)
			}
		}
		if got.Spec.SchedulingGroup != nil && got.Spec.SchedulingGroup.PodGroupName != nil {
			pg, err := client.SchedulingV1beta1().PodGroups(pod.Namespace).Get(ctx, *got.Spec.SchedulingGroup.PodGroupName, metav1.GetOptions{})
			if err == nil {
				for _, c := range pg.Status.Conditions {
					if c.Type == "PodGroupInitiallyScheduled" {
						out.PodGroup = &groupCondition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
					}
				}
			}
		}
		results = append(results, out)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Pod < results[j].Pod })
	return results, nil
}

func tracef(format string, args ...any) {
	if os.Getenv("ORACLE_TRACE") != "" {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

func waitFor(cond func() bool) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("timed out")
}

// settle waits until no outcome has arrived for 50ms.
func settle(seen *outcomes) {
	last := seen.total()
	quiet := time.Now()
	for time.Since(quiet) < 50*time.Millisecond {
		time.Sleep(5 * time.Millisecond)
		if n := seen.total(); n != last {
			last, quiet = n, time.Now()
		}
	}
}

func (o *outcomes) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, events := range o.events {
		n += len(events)
	}
	return n
}

func (o *outcomes) last(key string) *eventsv1Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	events := o.events[key]
	if len(events) == 0 {
		return nil
	}
	return events[len(events)-1]
}

func (o *outcomes) failures(key string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for _, e := range o.events[key] {
		if e.Reason == "FailedScheduling" {
			out = append(out, e.Note)
		}
	}
	return out
}
