// Command oracle runs upstream's kube-scheduler v1.37.2 in process on a cluster file and prints
// what became of each pending pod as JSON: its node or its FailedScheduling message, and per node
// the plugins' weighted scores and the total, so that a comparison with kubesched does not depend
// on upstream's random pick among equally scored nodes (the top nodes are printed as a set).
//
// Usage: oracle CLUSTER.yaml
//
// The file holds the objects `kubesched simulate` reads (Nodes, Pods, PriorityClasses, ...). The
// scheduler runs with its default profile against a fake clientset and shared informers; pods that
// name a node are there from the start, pending pods are created and scheduled one at a time, in
// the file's order.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the API's defaults, as kube-apiserver applies them
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// result is one pending pod's outcome.
type result struct {
	Pod      string                    `json:"pod"`
	Node     string                    `json:"node,omitempty"`
	Message  string                    `json:"message,omitempty"`
	TopNodes []string                  `json:"topNodes,omitempty"`
	Scores   map[string]map[string]int `json:"scores,omitempty"`
	Totals   map[string]int            `json:"totals,omitempty"`
}

// capture is a logr sink keeping the scheduler's V(10) score lines per pod.
type capture struct {
	mu     sync.Mutex
	scores map[string]map[string]map[string]int // pod -> node -> plugin -> weighted score
	totals map[string]map[string]int            // pod -> node -> total
}

func (c *capture) Init(logr.RuntimeInfo)          {}
func (c *capture) Enabled(level int) bool         { return level <= 10 }
func (c *capture) Error(error, string, ...any)    {}
func (c *capture) WithValues(...any) logr.LogSink { return c }
func (c *capture) WithName(string) logr.LogSink   { return c }

func (c *capture) Info(_ int, msg string, kv ...any) {
	if msg != "Plugin scored node for pod" && msg != "Calculated node's final score for pod" {
		return
	}
	values := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			values[k] = kv[i+1]
		}
	}
	pod := fmt.Sprint(values["pod"])
	node := fmt.Sprint(values["node"])
	score := toInt(values["score"])
	c.mu.Lock()
	defer c.mu.Unlock()
	if msg == "Calculated node's final score for pod" {
		if c.totals[pod] == nil {
			c.totals[pod] = map[string]int{}
		}
		c.totals[pod][node] = score
		return
	}
	if c.scores[pod] == nil {
		c.scores[pod] = map[string]map[string]int{}
	}
	if c.scores[pod][node] == nil {
		c.scores[pod][node] = map[string]int{}
	}
	c.scores[pod][node][fmt.Sprint(values["plugin"])] = score
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

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

func load(path string) ([]runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []runtime.Object
	for {
		var raw runtime.RawExtension
		if err := decoder.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || string(bytes.TrimSpace(raw.Raw)) == "null" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
		if err != nil {
			return nil, err
		}
		legacyscheme.Scheme.Default(obj)
		if m, err := meta.Accessor(obj); err == nil && m.GetUID() == "" {
			// kube-apiserver gives every object a UID; the fake clientset does not
			m.SetUID(types.UID(fmt.Sprintf("uid-%s-%s", m.GetNamespace(), m.GetName())))
		}
		out = append(out, obj)
	}
}

func run(path string) ([]result, error) {
	objects, err := load(path)
	if err != nil {
		return nil, err
	}
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding := action.(k8stesting.CreateAction).GetObject().(*v1.Binding)
		got, err := client.Tracker().Get(podsResource, binding.Namespace, binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := got.(*v1.Pod).DeepCopy()
		pod.Spec.NodeName = binding.Target.Name
		return true, binding, client.Tracker().Update(podsResource, pod, binding.Namespace)
	})
	sink := &capture{scores: map[string]map[string]map[string]int{}, totals: map[string]map[string]int{}}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.New(sink)))
	defer cancel()

	var pending []*v1.Pod
	for _, obj := range objects {
		if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName == "" {
			if pod.Namespace == "" {
				pod.Namespace = metav1.NamespaceDefault
			}
			pending = append(pending, pod)
			continue
		}
		if err := client.Tracker().Add(obj); err != nil {
			return nil, err
		}
	}
	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	informerFactory := informers.NewSharedInformerFactory(client, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	sched, err := scheduler.New(ctx, client, informerFactory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds))
	if err != nil {
		return nil, err
	}
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	// every object listed has reached the scheduler's handlers (its cache), as Run waits for
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, err
	}
	go sched.SchedulingQueue.Run(klog.FromContext(ctx))

	var results []result
	for _, pod := range pending {
		created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		key := created.Namespace + "/" + created.Name
		// the informer hands the pod to the queue; ScheduleOne pops it
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			queued, _ := sched.SchedulingQueue.PendingPods()
			return len(queued) > 0, nil
		}); err != nil {
			return nil, fmt.Errorf("%s never reached the queue", key)
		}
		sched.ScheduleOne(ctx)
		out := result{Pod: key}
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got, err := client.CoreV1().Pods(created.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got.Spec.NodeName != "" {
				out.Node = got.Spec.NodeName
				return true, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
					out.Message = c.Message
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return nil, fmt.Errorf("%s: no outcome: %w", key, err)
		}
		sink.mu.Lock()
		out.Scores = sink.scores[key]
		out.Totals = sink.totals[key]
		sink.mu.Unlock()
		best := -1
		for node, total := range out.Totals {
			if total > best {
				best, out.TopNodes = total, []string{node}
			} else if total == best {
				out.TopNodes = append(out.TopNodes, node)
			}
		}
		sort.Strings(out.TopNodes)
		results = append(results, out)
	}
	return results, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: oracle CLUSTER.yaml")
		os.Exit(2)
	}
	results, err := run(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "oracle: %s: %s\n", os.Args[1], strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(results); err != nil {
		os.Exit(1)
	}
}
