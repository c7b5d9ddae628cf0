package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	testingclock "k8s.io/utils/clock/testing"
)

// attempts bounds the scheduling cycles one pending pod gets (a preemption, then its placement).
const attempts = 3

// result is one pending pod's outcome.
type result struct {
	Pod           string                    `json:"pod"`
	Node          string                    `json:"node,omitempty"`
	Message       string                    `json:"message,omitempty"`
	NominatedNode string                    `json:"nominatedNode,omitempty"`
	Gated         string                    `json:"gated,omitempty"` // "plugin: message" of a PreEnqueue plugin holding it back
	Victims       []string                  `json:"victims,omitempty"`
	TopNodes      []string                  `json:"topNodes,omitempty"`
	Scores        map[string]map[string]int `json:"scores,omitempty"`
	Totals        map[string]int            `json:"totals,omitempty"`
	// the last attempt's Filter status per node, and per node and plugin the score before
	// NormalizeScore and after it (before the weight)
	Filters    map[string]filterStatus     `json:"filters,omitempty"`
	Raw        map[string]map[string]int64 `json:"raw,omitempty"`
	Normalized map[string]map[string]int64 `json:"normalized,omitempty"`
	// with --together: the pod's PodGroup's PodGroupInitiallyScheduled condition
	PodGroup *groupCondition `json:"podGroup,omitempty"`
	Messages []string        `json:"messages,omitempty"` // with --together: every FailedScheduling message, in order
}

type eventsv1Event = eventsv1.Event

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// deletions records the pods deleted through the client (preemption's victims), in order.
type deletions struct {
	mu   sync.Mutex
	keys []string
}

func (d *deletions) take() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.keys
	d.keys = nil
	sort.Strings(out)
	return out
}

func run(path string, cfg *config.KubeSchedulerConfiguration, sink *capture, all bool) ([]result, error) {
	objects, err := load(path)
	if err != nil {
		return nil, err
	}
	client := fake.NewClientset()
	// every write gets a new resourceVersion, as kube-apiserver's would (versions.go): the
	// scheduler's handlers do not drop updates as unchanged (eventhandlers.go compares
	// resourceVersions), and its assume caches order what they hold by them
	var version atomic.Int64
	version.Store(1000)
	tracker := versionedTracker{client.Tracker(), &version}
	client.PrependReactor("*", "*", k8stesting.ObjectReaction(tracker))
	watches := func(action k8stesting.Action) (watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		return tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
	}
	client.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := watches(action)
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	selectPods(client, tracker, watches)
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding := action.(k8stesting.CreateAction).GetObject().(*v1.Binding)
		got, err := tracker.Get(podsResource, binding.Namespace, binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := got.(*v1.Pod).DeepCopy()
		pod.Spec.NodeName = binding.Target.Name
		return true, binding, tracker.Update(podsResource, pod, binding.Namespace)
	})
	// the persistent volume controller's part of a delayed binding: VolumeBinding's PreBind writes the
	// PV's claimRef and waits until the claim is fully bound (pkg/controller/volume/persistentvolume)
	pvs := schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	pvcs := schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	client.PrependReactor("update", "persistentvolumes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pv := action.(k8stesting.UpdateAction).GetObject().(*v1.PersistentVolume).DeepCopy()
		if pv.Spec.ClaimRef == nil || action.GetSubresource() != "" {
			return false, nil, nil
		}
		pv.Status.Phase = v1.VolumeBound
		if err := tracker.Update(pvs, pv, ""); err != nil {
			return true, nil, err
		}
		got, err := tracker.Get(pvcs, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
		if err != nil {
			return true, nil, err
		}
		pvc := got.(*v1.PersistentVolumeClaim).DeepCopy()
		pvc.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
		pvc.Status.Phase = v1.ClaimBound
		if err := tracker.Update(pvcs, pvc, pvc.Namespace); err != nil {
			return true, nil, err
		}
		stored, err := tracker.Get(pvs, "", pv.Name)
		return true, stored, err
	})
	// the external provisioner and the PV controller for a claim the scheduler selected a node for:
	// a volume of the claim's size and class, bound to it (sig-storage-lib-external-provisioner)
	client.PrependReactor("update", "persistentvolumeclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pvc := action.(k8stesting.UpdateAction).GetObject().(*v1.PersistentVolumeClaim).DeepCopy()
		if action.GetSubresource() != "" || pvc.Spec.VolumeName != "" || pvc.Annotations["volume.kubernetes.io/selected-node"] == "" {
			return false, nil, nil
		}
		pv := &v1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(pvc.UID)},
			Spec: v1.PersistentVolumeSpec{
				Capacity:                      v1.ResourceList{v1.ResourceStorage: pvc.Spec.Resources.Requests[v1.ResourceStorage]},
				AccessModes:                   pvc.Spec.AccessModes,
				StorageClassName:              ptrValue(pvc.Spec.StorageClassName),
				PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
				ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
				PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/provisioned"}},
			},
			Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
		}
		if err := tracker.Add(pv); err != nil {
			return true, nil, err
		}
		pvc.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
		pvc.Status.Phase = v1.ClaimBound
		if err := tracker.Update(pvcs, pvc, pvc.Namespace); err != nil {
			return true, nil, err
		}
		return true, pvc, nil
	})
	deleted := &deletions{}
	client.PrependReactor("delete", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		d := action.(k8stesting.DeleteAction)
		deleted.mu.Lock()
		deleted.keys = append(deleted.keys, d.GetNamespace()+"/"+d.GetName())
		deleted.mu.Unlock()
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.New(sink)))
	defer cancel()

	var pending []*v1.Pod
	for _, obj := range objects {
		if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName == "" {
			pending = append(pending, pod)
			continue
		}
		if err := tracker.Add(obj); err != nil {
			return nil, err
		}
	}
	informerFactory := scheduler.NewInformerFactory(client, 0, nil)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	seen := &outcomes{events: map[string][]*eventsv1.Event{}}
	stopEvents, err := broadcaster.StartEventWatcher(seen.handle)
	if err != nil {
		return nil, err
	}
	defer stopEvents()
	defer broadcaster.Shutdown()
	// the queue's clock stands still unless the oracle steps it (backoff): a run does not depend
	// on how long this machine takes
	clock := testingclock.NewFakeClock(time.Now())
	sched, err := scheduler.New(ctx, client, informerFactory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithClock(clock),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithParallelism(cfg.Parallelism),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds))
	if err != nil {
		return nil, err
	}
	recordings := map[string]*recording{}
	for name, f := range sched.Profiles {
		recordings[name] = newRecording(f)
		sched.Profiles[name] = recordings[name]
	}
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	// every object listed has reached the scheduler's handlers (its cache), as Run waits for
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, err
	}
	// what Run starts besides the ScheduleOne loop, which the oracle drives itself
	sched.SchedulingQueue.Run(klog.FromContext(ctx))
	defer sched.SchedulingQueue.Close()
	if sched.APIDispatcher != nil {
		sched.APIDispatcher.Run(klog.FromContext(ctx))
		defer sched.APIDispatcher.Close()
	}

	if all {
		return together(ctx, sched, clock, client, sink, seen, deleted, pending)
	}
	var results []result
	for _, pod := range pending {
		sink.reset(pod.Namespace + "/" + pod.Name) // an earlier file's pod of the same name
		created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		rec := recordings[created.Spec.SchedulerName]
		if rec == nil {
			return nil, fmt.Errorf("%s/%s: no profile %q", created.Namespace, created.Name, created.Spec.SchedulerName)
		}
		out, err := place(ctx, sched, clock, rec, client, sink, deleted, seen, created)
		if err != nil {
			return nil, err
		}
		results = append(results, out)
	}
	return results, nil
}

// outcomes records the scheduler's Scheduled and FailedScheduling events per pod, in order: one
// per finished scheduling attempt.
type outcomes struct {
	mu     sync.Mutex
	events map[string][]*eventsv1.Event
}

func (o *outcomes) handle(obj runtime.Object) {
	e, ok := obj.(*eventsv1.Event)
	if !ok || (e.Reason != "Scheduled" && e.Reason != "FailedScheduling") {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := e.Regarding.Namespace + "/" + e.Regarding.Name
	o.events[key] = append(o.events[key], e)
}

func (o *outcomes) after(key string, seen int) *eventsv1.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.events[key]) > seen {
		return o.events[key][seen]
	}
	return nil
}

// queued reports whether the pod waits in the active or backoff queue, where ScheduleOne pops it,
// with the node its preemption nominated: in a cluster the victims take their grace period to go,
// long after the status patch reached the scheduler's informer.
// A pod backing off waits for the clock, which is stepped past the longest backoff.
func queued(sched *scheduler.Scheduler, clock *testingclock.FakeClock, pod *v1.Pod, nominated string) bool {
	for _, p := range sched.SchedulingQueue.PodsInActiveQ() {
		if p.UID == pod.UID {
			return p.Status.NominatedNodeName == nominated
		}
	}
	for _, p := range sched.SchedulingQueue.PodsInBackoffQ() {
		if p.UID == pod.UID {
			clock.Step(time.Minute)
			return false
		}
	}
	return false
}

// place runs scheduling cycles for one pod until it is bound, or fails without preempting.
func place(ctx context.Context, sched *scheduler.Scheduler, clock *testingclock.FakeClock, rec *recording, client *fake.Clientset, sink *capture, deleted *deletions, seen *outcomes, pod *v1.Pod) (result, error) {
	key := pod.Namespace + "/" + pod.Name
	out := result{Pod: key}
	poll := func(cond wait.ConditionWithContextFunc) error {
		return wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 10*time.Second, true, cond)
	}
	for attempt := 0; attempt < attempts; attempt++ {
		if err := poll(func(context.Context) (bool, error) {
			return queued(sched, clock, pod, out.NominatedNode) || (attempt == 0 && sink.gating(key) != ""), nil
		}); err != nil {
			if attempt > 0 {
				break // unschedulable until something else changes
			}
			return out, fmt.Errorf("%s never reached the queue", key)
		}
		if attempt == 0 && !queued(sched, clock, pod, "") {
			// never popped: a PreEnqueue plugin keeps it out of the active queue (a later
			// attempt's gating, DefaultPreemption's while its victims go, is transient)
			out.Gated = sink.gating(key)
			return out, nil
		}
		sink.forget(key)
		rec.forget(key)
		sched.ScheduleOne(ctx)
		var event *eventsv1.Event
		if err := poll(func(context.Context) (bool, error) {
			event = seen.after(key, attempt)
			return event != nil, nil
		}); err != nil {
			return out, fmt.Errorf("%s: no outcome: %w", key, err)
		}
		if event.Reason == "Scheduled" {
			if err := poll(func(context.Context) (bool, error) {
				got, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				out.Node = got.Spec.NodeName
				return out.Node != "", err
			}); err != nil {
				return out, fmt.Errorf("%s: not bound: %w", key, err)
			}
			break
		}
		out.Message = event.Note
		sink.mu.Lock()
		nominated := sink.preempted[key]
		delete(sink.preempted, key)
		sink.mu.Unlock()
		if nominated == "" {
			break
		}
		out.NominatedNode = nominated
		if utilfeature.DefaultFeatureGate.Enabled(features.SchedulerAsyncPreemption) {
			// the victims are deleted in a goroutine; wait for its end. Victims already terminating
			// get no call, and when every victim was, no goroutine starts (prepareCandidateAsync):
			// those skips are logged before the cycle ends, the goroutine's start just after it
			since := time.Now()
			if err := poll(func(context.Context) (bool, error) {
				sink.mu.Lock()
				defer sink.mu.Unlock()
				none := sink.skipped[key] > 0 && !sink.started[key] && time.Since(since) > time.Second
				return sink.finished[key] || none, nil
			}); err != nil {
				return out, fmt.Errorf("%s: preemption never finished: %w", key, err)
			}
			sink.mu.Lock()
			delete(sink.finished, key)
			delete(sink.started, key)
			delete(sink.skipped, key)
			sink.mu.Unlock()
		}
		out.Victims = append(out.Victims, deleted.take()...)
	}
	sink.mu.Lock()
	out.Scores = sink.scores[key]
	out.Totals = sink.totals[key]
	sink.mu.Unlock()
	if a := rec.take(key); a != nil {
		out.Filters = a.filters
		if len(a.raw) > 0 {
			out.Raw, out.Normalized = a.raw, a.normalized
		}
	}
	best := -1
	for node, total := range out.Totals {
		if total > best {
			best, out.TopNodes = total, []string{node}
		} else if total == best {
			out.TopNodes = append(out.TopNodes, node)
		}
	}
	sort.Strings(out.TopNodes)
	return out, nil
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
