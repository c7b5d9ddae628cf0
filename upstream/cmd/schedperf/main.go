// Command schedperf times kube-scheduler v1.37.2's scheduler alone on a workload file, the
// upstream side of benchmarks/like_for_like.py, which times kubesched's scheduler on the same file
// the same way.
//
// Usage: schedperf [--feature-gates A=true,B=false] WORKLOAD.json
//
// The file holds "objects" (nodes, priority classes, namespaces, ...; pods among them already bound
// to their nodes) and "measured", the pending pods. Everything is in the fake API (fakeapi, on
// client-go's plain object tracker, which keeps no managed fields) before
// the scheduler starts, so its informers list it all and every measured pod is in activeQ when the
// timed window opens; the window closes when the last measured pod's binding has reached the
// scheduler's pod informer. The scheduler is upstream's own, built by scheduler.New with the
// default profile, run by Scheduler.Run (its ScheduleOne loop, the queue's flushes, the binding
// goroutines), its events recorded to the fake API through an events broadcaster, as
// kube-scheduler does. It prints one line of JSON: the measured pods, how many were bound, the
// window's wall seconds and the process's CPU seconds in it (user and system: the scheduler's
// goroutines, and the fake API's, which stands in for the network), pods/s and CPU ms per pod.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the API's defaults, as kube-apiserver applies them
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/profile"

	"kubesched.dev/upstream/internal/configured"
	"kubesched.dev/upstream/internal/fakeapi"
)

// stall is how long the window stays open with no binding before it is closed (a pod that cannot be
// placed; kubesched's side stops when its queue holds only such pods)
const stall = 5 * time.Second

type workload struct {
	Objects  []json.RawMessage `json:"objects"`
	Measured []json.RawMessage `json:"measured"`
}

type report struct {
	Pods          int     `json:"pods"`
	Bound         int64   `json:"bound"`
	Seconds       float64 `json:"seconds"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	PodsPerSecond float64 `json:"pods_per_second"`
	CPUMsPerPod   float64 `json:"cpu_ms_per_pod"`
}

// decode reads one object with the API's defaults, in the default namespace when namespaced and
// given none, with a UID (kube-apiserver gives every object one; the fake API does not).
func decode(raw []byte) (runtime.Object, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, err
	}
	legacyscheme.Scheme.Default(obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if m.GetNamespace() == "" && (kind == "Pod" || kind == "PersistentVolumeClaim" || kind == "PodDisruptionBudget") {
		m.SetNamespace(metav1.NamespaceDefault)
	}
	if m.GetUID() == "" {
		m.SetUID(types.UID(fmt.Sprintf("uid-%s-%s-%s", kind, m.GetNamespace(), m.GetName())))
	}
	return obj, nil
}

// prioritize gives each pod and PodGroup naming a PriorityClass of the workload that class's value,
// as kube-apiserver's Priority admission plugin does (plugin/pkg/admission/priority): the fake API
// admits nothing, and a workload cannot give the value itself, since kubesched's API server, like
// kube-apiserver, refuses a pod that does.
func prioritize(objects []runtime.Object) {
	values := map[string]int32{}
	for _, obj := range objects {
		if pc, ok := obj.(*schedulingv1.PriorityClass); ok {
			values[pc.Name] = pc.Value
		}
	}
	for _, obj := range objects {
		switch o := obj.(type) {
		case *v1.Pod:
			if v, ok := values[o.Spec.PriorityClassName]; ok && o.Spec.Priority == nil {
				o.Spec.Priority = &v
			}
		case *schedulingv1beta1.PodGroup:
			if v, ok := values[o.Spec.PriorityClassName]; ok && o.Spec.Priority == nil {
				o.Spec.Priority = &v
			}
		}
	}
}

func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano()).Seconds()
}

func run(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var w workload
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// the plain tracker: an API server that costs the scheduler's process as little as it can
	client, tracker := fakeapi.NewWith(k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder()))
	objects := make([]runtime.Object, 0, len(w.Objects)+len(w.Measured))
	for i, raw := range append(w.Objects, w.Measured...) {
		obj, err := decode(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: object %d: %w", path, i, err)
		}
		objects = append(objects, obj)
	}
	prioritize(objects)
	for i, obj := range objects {
		if err := tracker.Add(obj); err != nil {
			return nil, fmt.Errorf("%s: object %d: %w", path, i, err)
		}
	}
	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informerFactory := scheduler.NewInformerFactory(client, 0, nil)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	sched, err := scheduler.New(ctx, client, informerFactory, nil, profile.NewRecorderFactory(broadcaster), configured.Options(cfg)...)
	if err != nil {
		return nil, err
	}
	// the window closes on the last measured pod's binding, as the informer delivers it
	var bound atomic.Int64
	done := make(chan struct{})
	want := int64(len(w.Measured))
	_, err = informerFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			before, ok1 := oldObj.(*v1.Pod)
			after, ok2 := newObj.(*v1.Pod)
			if ok1 && ok2 && before.Spec.NodeName == "" && after.Spec.NodeName != "" && bound.Add(1) == want {
				close(done)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, err
	}
	if active, _ := sched.SchedulingQueue.PendingPods(); len(active) != len(w.Measured) {
		return nil, fmt.Errorf("%s: %d measured pods, %d pending in the queue before the window", path, len(w.Measured), len(active))
	}
	if profile := os.Getenv("SCHEDPERF_CPUPROFILE"); profile != "" { // the window's CPU profile, for reading where it goes
		f, err := os.Create(profile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	cpu0, wall0 := cpuSeconds(), time.Now()
	go sched.Run(ctx)
	// a pod that cannot be placed would hold the window open: it closes too once no pod has been
	// bound for a few seconds (the window then ends at the last binding, reported with the count)
	last, lastAt := bound.Load(), time.Now()
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	end := time.Now()
wait:
	for {
		select {
		case <-done:
			end = time.Now()
			break wait
		case now := <-ticker.C:
			if n := bound.Load(); n != last {
				last, lastAt = n, now
			} else if now.Sub(lastAt) > stall {
				end = lastAt
				break wait
			}
		}
	}
	wall, cpu := end.Sub(wall0).Seconds(), cpuSeconds()-cpu0
	r := &report{Pods: len(w.Measured), Bound: bound.Load(), Seconds: wall, CPUSeconds: cpu}
	if r.Bound > 0 {
		r.PodsPerSecond = float64(r.Bound) / wall
		r.CPUMsPerPod = 1000 * cpu / float64(r.Bound)
	}
	return r, nil
}

func main() {
	flags := flag.NewFlagSet("schedperf", flag.ContinueOnError)
	gates := flags.String("feature-gates", "", "kube-scheduler's --feature-gates, A=true,B=false")
	if err := flags.Parse(os.Args[1:]); err != nil || flags.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: schedperf [--feature-gates A=true,B=false] WORKLOAD.json")
		os.Exit(2)
	}
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			fmt.Fprintf(os.Stderr, "schedperf: --feature-gates: %s\n", err)
			os.Exit(1)
		}
	}
	// a fake watch buffers 100 events and panics past that; kube-apiserver's watch cache holds
	// more: preemption deleting a thousand pods at once outruns the informers for a moment
	watch.DefaultChanSize = 20000
	r, err := run(flags.Arg(0))
	if err != nil {
		fmt.Fprintf(os.Stderr, "schedperf: %s\n", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		os.Exit(1)
	}
}
