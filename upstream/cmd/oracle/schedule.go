package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	testingclock "k8s.io/utils/clock/testing"

	"kubesched.dev/upstream/internal/configured"
	"kubesched.dev/upstream/internal/fakeapi"
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

var podsResource = fakeapi.Pods

// deletions records the pods deleted through the client (preemption's victims), in order. A bound
// pod deleted with a grace period is not removed at once, as kube-apiserver does not remove it: it
// gets its deletionTimestamp (an update the scheduler's informers see) and stays terminating until
// its grace period has passed on the queue's clock, when finishDue removes it as its kubelet would
// (the fake clientset alone removes it at once).
type deletions struct {
	mu          sync.Mutex
	keys        []string
	terminating []terminating
	remove      func(namespace, name string) error
	clock       *testingclock.FakeClock
	// the one pod being placed (not in --together), and how many of its updates the scheduler had
	// handled when its attempt began: see nominationSeen
	preemptor *v1.Pod
	sink      *capture
	baseline  int    // the preemptor's updates handled when its attempt began
	nominated string // its nomination then
}

// nominationSeen waits (a little) until the scheduler has handled the update that the failed
// attempt wrote to the preemptor (its nomination). The preemption goroutine deletes victims while
// the failed cycle writes the nomination. Over an API server the goroutine takes two round trips a
// victim, the nomination one and its watch event, so the update usually arrives while the
// preemption still runs, and DefaultPreemption's PreEnqueue holds the pod if that update requeues
// it; on the fake clientset the goroutine is done first. The oracle's deletions wait for the
// update (slowDeletes), so they come in the usual order, as kubesched's do.
func (d *deletions) nominationSeen(node string) {
	d.mu.Lock()
	preemptor, baseline, nominated := d.preemptor, d.baseline, d.nominated
	d.mu.Unlock()
	if preemptor == nil || d.sink == nil || nominated == node {
		return // no nomination changes: no update requeues the preemptor
	}
	key := preemptor.Namespace + "/" + preemptor.Name
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if d.sink.updated(key) > baseline {
			time.Sleep(50 * time.Millisecond) // the handler's move right after the update
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type terminating struct {
	pod *v1.Pod
	end time.Time
}

// finishDue ends the terminations whose grace period has passed on the clock.
func (d *deletions) finishDue() error {
	d.mu.Lock()
	var due []*v1.Pod
	kept := d.terminating[:0]
	for _, t := range d.terminating {
		if d.clock.Now().Before(t.end) {
			kept = append(kept, t)
		} else {
			due = append(due, t.pod)
		}
	}
	d.terminating = kept
	d.mu.Unlock()
	for _, p := range due {
		if err := d.remove(p.Namespace, p.Name); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// finish lets the clock run to the end of every termination begun, and ends them.
func (d *deletions) finish() error {
	d.mu.Lock()
	var last time.Time
	for _, t := range d.terminating {
		if t.end.After(last) {
			last = t.end
		}
	}
	d.mu.Unlock()
	if now := d.clock.Now(); last.After(now) {
		d.clock.Step(last.Sub(now))
	}
	return d.finishDue()
}

// step moves the clock on, ending the terminations due by then: a pod backing off is retried when
// its backoff (1 to 10 s by default) is over, before victims given 30 s have gone.
func (d *deletions) step(by time.Duration) error {
	d.clock.Step(by)
	return d.finishDue()
}

// the profile's podInitialBackoffSeconds and podMaxBackoffSeconds (run sets them)
var initialBackoff, maxBackoff = time.Second, 10 * time.Second

// backoff is the queue's backoff of a pod after its n-th attempt (calculateBackoffDuration).
func backoff(attempts int) time.Duration {
	d := initialBackoff
	for i := 1; i < attempts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// pending reports whether a termination is under way, and each terminating pod as the scheduler's
// cache holds it has its deletionTimestamp (the update has reached the scheduler).
func (d *deletions) pending(sched *scheduler.Scheduler) (bool, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range d.terminating {
		cached, err := sched.Cache.GetPod(t.pod)
		if err != nil || cached.DeletionTimestamp == nil {
			return true, false
		}
	}
	return len(d.terminating) > 0, true
}

// terminations is how many victims are terminating.
func (d *deletions) terminations() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.terminating)
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
	// every write gets a new resourceVersion, as kube-apiserver's would (fakeapi.VersionedTracker):
	// the scheduler's handlers do not drop updates as unchanged (eventhandlers.go compares
	// resourceVersions), and its assume caches order what they hold by them
	client, tracker := fakeapi.New()
	selectPods(client, tracker, tracker.WatchFor)
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
	deleted := &deletions{remove: func(namespace, name string) error { return tracker.Delete(podsResource, namespace, name) }}
	client.PrependReactor("delete", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		d := action.(k8stesting.DeleteAction)
		deleted.mu.Lock()
		defer deleted.mu.Unlock()
		deleted.keys = append(deleted.keys, d.GetNamespace()+"/"+d.GetName())
		got, err := tracker.Get(podsResource, d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		pod := got.(*v1.Pod).DeepCopy()
		// the pod strategy's CheckGracefulDelete: the pod's own grace period unless the request
		// gives one; an unbound pod, or a grace period of 0, is removed at once
		grace := int64(v1.DefaultTerminationGracePeriodSeconds)
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
		if opts := d.GetDeleteOptions(); opts.GracePeriodSeconds != nil {
			grace = *opts.GracePeriodSeconds
		}
		if pod.Spec.NodeName == "" || grace == 0 || pod.DeletionTimestamp != nil {
			return false, nil, nil
		}
		now := metav1.Now()
		pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &grace
		if err := tracker.Update(podsResource, pod, pod.Namespace); err != nil {
			return true, nil, err
		}
		deleted.terminating = append(deleted.terminating, terminating{pod, deleted.clock.Now().Add(time.Duration(grace) * time.Second)})
		return true, pod, nil
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
	deleted.clock = clock
	initialBackoff = time.Duration(cfg.PodInitialBackoffSeconds) * time.Second
	maxBackoff = time.Duration(cfg.PodMaxBackoffSeconds) * time.Second
	sched, err := scheduler.New(ctx, slowDeletes{client, deleted}, informerFactory, nil, profile.NewRecorderFactory(broadcaster),
		configured.Options(cfg, scheduler.WithClock(clock))...)
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
		deleted.mu.Lock()
		deleted.preemptor, deleted.sink = created, sink
		deleted.mu.Unlock()
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
// A pod backing off waits for the clock, which is stepped a second at a time.
func queued(sched *scheduler.Scheduler, deleted *deletions, pod *v1.Pod, nominated string, attempts int, stepped *bool) (bool, error) {
	for _, p := range sched.SchedulingQueue.PodsInActiveQ() {
		if p.UID == pod.UID {
			return p.Status.NominatedNodeName == nominated, nil
		}
	}
	for _, p := range sched.SchedulingQueue.PodsInBackoffQ() {
		if p.UID == pod.UID && !*stepped {
			*stepped = true // once: the queue's flush moves it when its backoff is over
			return false, deleted.step(backoff(attempts))
		}
	}
	return false, nil
}

// slowDeletes is the scheduler's clientset with pod deletions made after the preemptor's update
// has been handled (nominationSeen); everything else is the fake clientset's. (A reactor cannot
// wait: the fake clientset holds its lock while reactors run, and the update waits on it.)
type slowDeletes struct {
	*fake.Clientset
	deleted *deletions
}

func (c slowDeletes) CoreV1() corev1client.CoreV1Interface {
	return slowCoreV1{c.Clientset.CoreV1(), c.deleted}
}

type slowCoreV1 struct {
	corev1client.CoreV1Interface
	deleted *deletions
}

func (c slowCoreV1) Pods(namespace string) corev1client.PodInterface {
	return slowPods{c.CoreV1Interface.Pods(namespace), c.deleted}
}

type slowPods struct {
	corev1client.PodInterface
	deleted *deletions
}

func (p slowPods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if victim, err := p.PodInterface.Get(ctx, name, metav1.GetOptions{}); err == nil {
		p.deleted.nominationSeen(victim.Spec.NodeName)
	}
	return p.PodInterface.Delete(ctx, name, opts)
}

// settleTerminations waits until the scheduler has seen every termination begun and the pod's nomination, then
// ends the terminations unless the pod already waits in the active or backoff queue.
func settleTerminations(ctx context.Context, sched *scheduler.Scheduler, pod *v1.Pod, nominated string, deleted *deletions) error {
	if busy, _ := deleted.pending(sched); !busy {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, seen := deleted.pending(sched)
		if !seen {
			return false, nil
		}
		pending, _ := sched.SchedulingQueue.PendingPods()
		for _, p := range pending {
			if p.UID == pod.UID {
				return p.Status.NominatedNodeName == nominated, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("terminating victims never reached the scheduler: %w", err)
	}
	// the same handler that stored the new nomination moves the pods it held room from right after
	// (updatePodInSchedulingQueue): give it that moment
	time.Sleep(50 * time.Millisecond)
	for _, p := range append(sched.SchedulingQueue.PodsInActiveQ(), sched.SchedulingQueue.PodsInBackoffQ()...) {
		if p.UID == pod.UID {
			return nil
		}
	}
	return deleted.finish()
}

// place runs scheduling cycles for one pod until it is bound, or fails without preempting.
func place(ctx context.Context, sched *scheduler.Scheduler, clock *testingclock.FakeClock, rec *recording, client *fake.Clientset, sink *capture, deleted *deletions, seen *outcomes, pod *v1.Pod) (result, error) {
	key := pod.Namespace + "/" + pod.Name
	out := result{Pod: key}
	// a pod that comes already nominated (an earlier preemption's) waits in the queue with that
	// nomination until its first attempt; later attempts, with the one its own preemption made
	initial := pod.Status.NominatedNodeName
	expected := func(attempt int) string {
		if attempt == 0 {
			return initial
		}
		return out.NominatedNode
	}
	poll := func(cond wait.ConditionWithContextFunc) error {
		return wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 10*time.Second, true, cond)
	}
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			// victims terminating: the scheduler sees each one's deletionTimestamp and the pod's
			// new nomination; a pod queued by then (its own nomination changed: eventhandlers.go's
			// hasNominatedNodeNameChanged) is tried while they terminate, else their kubelets end
			// them, which queues it
			if err := settleTerminations(ctx, sched, pod, out.NominatedNode, deleted); err != nil {
				return out, fmt.Errorf("%s: %w", key, err)
			}
		}
		stepped := false
		if err := poll(func(context.Context) (bool, error) {
			ok, err := queued(sched, deleted, pod, expected(attempt), attempt, &stepped)
			return ok || (attempt == 0 && sink.gating(key) != ""), err
		}); err != nil {
			if attempt > 0 {
				break // unschedulable until something else changes
			}
			return out, fmt.Errorf("%s never reached the queue", key)
		}
		if ok, _ := queued(sched, deleted, pod, initial, attempt, &stepped); attempt == 0 && !ok {
			// never popped: a PreEnqueue plugin keeps it out of the active queue (a later
			// attempt's gating, DefaultPreemption's while its victims go, is transient)
			out.Gated = sink.gating(key)
			return out, nil
		}
		sink.forget(key)
		rec.forget(key)
		current, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return out, err
		}
		deleted.mu.Lock()
		deleted.baseline, deleted.nominated = sink.updated(key), current.Status.NominatedNodeName
		deleted.mu.Unlock()
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
