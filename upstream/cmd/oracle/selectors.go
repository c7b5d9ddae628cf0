package main

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	podregistry "k8s.io/kubernetes/pkg/registry/core/pod"
)

// The fake clientset ignores field selectors: the scheduler's pod informer (newPodInformer lists
// and watches with status.phase!=Succeeded,status.phase!=Failed) would hold finished pods, which
// kube-apiserver never gives it. These reactors apply a pods list's and watch's selectors as
// kube-apiserver does: the pod registry's selectable fields, and a watch that sees a pod leave
// the selection as a deletion and enter it as an addition (storage/cacher's convertToWatchEvent).

// podFields is the pod registry's field set of a pod, converted to the internal type as
// kube-apiserver's storage holds it.
func podFields(pod *v1.Pod) fields.Set {
	var internal api.Pod
	if err := legacyscheme.Scheme.Convert(pod, &internal, nil); err != nil {
		return fields.Set{}
	}
	return podregistry.ToSelectableFields(&internal)
}

// selection is a list's or watch's label and field selectors over pods.
type selection struct {
	labels labels.Selector
	fields fields.Selector
}

func newSelection(opts metav1.ListOptions) (selection, error) {
	s := selection{labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if opts.LabelSelector != "" {
		if s.labels, err = labels.Parse(opts.LabelSelector); err != nil {
			return s, err
		}
	}
	if opts.FieldSelector != "" {
		if s.fields, err = fields.ParseSelector(opts.FieldSelector); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (s selection) everything() bool { return s.labels.Empty() && s.fields.Empty() }

func (s selection) has(obj runtime.Object) bool {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return true
	}
	return s.labels.Matches(labels.Set(pod.Labels)) && s.fields.Matches(podFields(pod))
}

// selectPods makes the client's pod lists and watches honour their selectors.
func selectPods(client *fake.Clientset, tracker k8stesting.ObjectTracker, watchPods func(action k8stesting.Action) (watch.Interface, error)) {
	client.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		list, ok := action.(k8stesting.ListActionImpl)
		if !ok || action.GetSubresource() != "" {
			return false, nil, nil
		}
		sel := selection{labels: list.ListRestrictions.Labels, fields: list.ListRestrictions.Fields}
		if sel.labels == nil {
			sel.labels = labels.Everything()
		}
		if sel.fields == nil {
			sel.fields = fields.Everything()
		}
		got, err := tracker.List(podsResource, v1.SchemeGroupVersion.WithKind("Pod"), action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		pods := got.(*v1.PodList)
		out := &v1.PodList{ListMeta: pods.ListMeta}
		for i := range pods.Items {
			if sel.has(&pods.Items[i]) {
				out.Items = append(out.Items, pods.Items[i])
			}
		}
		return true, out, nil
	})
	client.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		sel, err := newSelection(opts)
		if err != nil {
			return true, nil, err
		}
		// which pods the watcher holds: those in the selection when the watch starts
		held := map[string]bool{}
		var mu sync.Mutex
		if got, err := tracker.List(podsResource, v1.SchemeGroupVersion.WithKind("Pod"), action.GetNamespace()); err == nil {
			pods := got.(*v1.PodList)
			for i := range pods.Items {
				if sel.has(&pods.Items[i]) {
					held[pods.Items[i].Namespace+"/"+pods.Items[i].Name] = true
				}
			}
		}
		w, err := watchPods(action)
		if err != nil {
			return true, nil, err
		}
		if sel.everything() {
			return true, w, nil
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			m, err := meta.Accessor(e.Object)
			if err != nil {
				return e, true
			}
			key := m.GetNamespace() + "/" + m.GetName()
			mu.Lock()
			defer mu.Unlock()
			was := held[key]
			now := e.Type != watch.Deleted && sel.has(e.Object)
			held[key] = now
			switch {
			case now && was:
				return e, true
			case now:
				return watch.Event{Type: watch.Added, Object: e.Object}, true
			case was:
				return watch.Event{Type: watch.Deleted, Object: e.Object}, true
			}
			return e, false
		}), nil
	})
}
