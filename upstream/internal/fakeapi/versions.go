package fakeapi

import (
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
)

// VersionedTracker gives every object it stores a new resourceVersion, as kube-apiserver does on
// each write. The fake clientset's tracker keeps an object's resourceVersion as it was given (none),
// and the scheduler's assume cache (DynamicResources' claims) orders versions by it: without one, a
// claim allocated for one pod was lost before the next pod was scheduled, and two pods got the
// same device.
type VersionedTracker struct {
	k8stesting.ObjectTracker
	version *atomic.Int64
}

func (t VersionedTracker) stamp(obj runtime.Object) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(t.version.Add(1), 10))
	}
}

func (t VersionedTracker) Add(obj runtime.Object) error {
	t.stamp(obj)
	return t.ObjectTracker.Add(obj)
}

func (t VersionedTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t VersionedTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t VersionedTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.stamp(obj)
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}
