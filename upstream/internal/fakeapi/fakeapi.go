// Package fakeapi is the in-memory API the upstream harnesses run kube-scheduler v1.37.2 on: client-go's
// fake clientset with what the scheduler needs of kube-apiserver and nothing of the rest. Every write
// gets a new resourceVersion (VersionedTracker), watches start from the tracker, and a pod's binding
// subresource sets its node (the pod registry's BindingREST). The oracle adds its own reactors
// (field selectors, graceful deletion, volumes); schedperf uses it as it is.
package fakeapi

import (
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Pods is the pods resource.
var Pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// New is a fake clientset on a VersionedTracker whose resourceVersions start above 1000, with
// watches and pod bindings, over the clientset's own tracker (which keeps managed fields as
// server-side apply does).
func New() (*fake.Clientset, VersionedTracker) {
	return NewWith(nil)
}

// NewWith is New over the given tracker instead: client-go's plain ObjectTracker keeps no managed
// fields, and costs a write far less (the field-managed one builds a REST mapper on every write).
func NewWith(objects k8stesting.ObjectTracker) (*fake.Clientset, VersionedTracker) {
	client := fake.NewClientset()
	if objects == nil {
		objects = client.Tracker()
	}
	var version atomic.Int64
	version.Store(1000)
	tracker := VersionedTracker{objects, &version}
	client.PrependReactor("*", "*", k8stesting.ObjectReaction(tracker))
	client.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := tracker.WatchFor(action)
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding := action.(k8stesting.CreateAction).GetObject().(*v1.Binding)
		got, err := tracker.Get(Pods, binding.Namespace, binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := got.(*v1.Pod).DeepCopy()
		pod.Spec.NodeName = binding.Target.Name
		return true, binding, tracker.Update(Pods, pod, binding.Namespace)
	})
	return client, tracker
}

// WatchFor is the tracker's watch for a watch action, with its list options.
func (t VersionedTracker) WatchFor(action k8stesting.Action) (watch.Interface, error) {
	var opts metav1.ListOptions
	if w, ok := action.(k8stesting.WatchActionImpl); ok {
		opts = w.ListOptions
	}
	return t.Watch(action.GetResource(), action.GetNamespace(), opts)
}
