package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the API's defaults, as kube-apiserver applies them
	"k8s.io/kubernetes/pkg/features"
)

// load reads a cluster file's objects with the API's defaults and a UID each, as kube-apiserver
// would store them, and applies what the Priority admission plugin and the disruption controller
// would have written (see admit and disruptionStatus).
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
				break
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
		if m, err := meta.Accessor(obj); err == nil {
			if m.GetNamespace() == "" && namespaced(obj) {
				m.SetNamespace(metav1.NamespaceDefault)
			}
			if m.GetUID() == "" {
				// kube-apiserver gives every object a UID; the fake clientset does not
				m.SetUID(types.UID(fmt.Sprintf("uid-%s-%s", m.GetNamespace(), m.GetName())))
			}
		}
		out = append(out, obj)
	}
	for _, obj := range out {
		if pod, ok := obj.(*v1.Pod); ok {
			mergeLabelKeys(pod)
		}
	}
	if err := admitRuntimeClass(out); err != nil {
		return nil, err
	}
	if err := admit(out); err != nil {
		return nil, err
	}
	disruptionStatus(out)
	volumeStatus(out)
	return out, nil
}

func namespaced(obj runtime.Object) bool {
	switch obj.(type) {
	case *v1.Node, *v1.PersistentVolume, *schedulingv1.PriorityClass:
		return false
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	switch gvk.Kind {
	case "StorageClass", "CSINode", "CSIDriver", "DeviceClass", "ResourceSlice", "Namespace":
		return false
	}
	return true
}

// admit resolves each pod's priority from its PriorityClass (or the global default class) and
// takes the class's preemptionPolicy, as plugin/pkg/admission/priority does on create.
func admit(objects []runtime.Object) error {
	classes := map[string]*schedulingv1.PriorityClass{}
	var globalDefault *schedulingv1.PriorityClass
	for _, obj := range objects {
		if pc, ok := obj.(*schedulingv1.PriorityClass); ok {
			classes[pc.Name] = pc
			if pc.GlobalDefault && (globalDefault == nil || pc.Value > globalDefault.Value) {
				globalDefault = pc
			}
		}
	}
	for _, obj := range objects {
		// the Priority admission plugin's admitPodGroup: the group's class resolves to its priority
		if pg, ok := obj.(*schedulingv1beta1.PodGroup); ok {
			class := globalDefault
			if pg.Spec.PriorityClassName != "" {
				if class = classes[pg.Spec.PriorityClassName]; class == nil {
					return fmt.Errorf("podgroup %s/%s: no PriorityClass with name %s was found", pg.Namespace, pg.Name, pg.Spec.PriorityClassName)
				}
			}
			priority := int32(0)
			if class != nil {
				priority = class.Value
				pg.Spec.PriorityClassName = class.Name
			}
			if pg.Spec.Priority != nil && *pg.Spec.Priority != priority {
				return fmt.Errorf("podgroup %s/%s: priority set in the pod group (%d) must match the priority computed (%d) based on the priority class set in the spec", pg.Namespace, pg.Name, *pg.Spec.Priority, priority)
			}
			pg.Spec.Priority = &priority
			continue
		}
		pod, ok := obj.(*v1.Pod)
		if !ok {
			continue
		}
		var class *schedulingv1.PriorityClass
		if pod.Spec.PriorityClassName != "" {
			if class = classes[pod.Spec.PriorityClassName]; class == nil {
				return fmt.Errorf("pod %s/%s: no PriorityClass with name %s was found", pod.Namespace, pod.Name, pod.Spec.PriorityClassName)
			}
		} else if globalDefault != nil {
			class = globalDefault
			pod.Spec.PriorityClassName = class.Name
		}
		priority := int32(0)
		if class != nil {
			priority = class.Value
			if class.PreemptionPolicy != nil {
				policy := *class.PreemptionPolicy
				pod.Spec.PreemptionPolicy = &policy
			}
		}
		if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
			return fmt.Errorf("pod %s/%s: the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", pod.Namespace, pod.Name, *pod.Spec.Priority, priority)
		}
		pod.Spec.Priority = &priority
	}
	return nil
}

// disruptionStatus writes the status the disruption controller would compute for a budget given
// without one and with an integer minAvailable: every listed pod bound to a node and matching
// the selector counts as healthy (kubesched's hollow kubelet starts them ready).
func disruptionStatus(objects []runtime.Object) {
	for _, obj := range objects {
		pdb, ok := obj.(*policyv1.PodDisruptionBudget)
		if !ok || pdb.Status.ObservedGeneration != 0 || pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.Type != intstr.Int {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || selector.Empty() {
			continue
		}
		healthy := int32(0)
		for _, other := range objects {
			if pod, ok := other.(*v1.Pod); ok && pod.Namespace == pdb.Namespace && pod.Spec.NodeName != "" && selector.Matches(labels.Set(pod.Labels)) {
				healthy++
			}
		}
		desired := pdb.Spec.MinAvailable.IntVal
		pdb.Status = policyv1.PodDisruptionBudgetStatus{
			ObservedGeneration: pdb.Generation,
			CurrentHealthy:     healthy,
			DesiredHealthy:     desired,
			ExpectedPods:       healthy,
			DisruptionsAllowed: max(0, healthy-desired),
		}
	}
}

// admitRuntimeClass sets each pod's overhead from its RuntimeClass, as plugin/pkg/admission/runtimeclass
// does on create (a pod that names no class keeps what it has).
func admitRuntimeClass(objects []runtime.Object) error {
	classes := map[string]*nodev1.RuntimeClass{}
	for _, obj := range objects {
		if rc, ok := obj.(*nodev1.RuntimeClass); ok {
			classes[rc.Name] = rc
		}
	}
	for _, obj := range objects {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.RuntimeClassName == nil {
			continue
		}
		rc := classes[*pod.Spec.RuntimeClassName]
		if rc == nil {
			return fmt.Errorf("pod %s/%s: RuntimeClass %q not found", pod.Namespace, pod.Name, *pod.Spec.RuntimeClassName)
		}
		if rc.Overhead != nil && pod.Spec.Overhead == nil {
			pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
		}
	}
	return nil
}

// volumeStatus writes the phases the persistent volume controller would give objects listed without
// one (the API's defaults leave them Pending): a volume with no claim is Available, one whose claimRef names a listed claim is Bound, and a
// claim naming such a volume is Bound with its bind-completed annotation
// (pkg/controller/volume/persistentvolume: syncVolume, syncClaim).
func volumeStatus(objects []runtime.Object) {
	claimed := map[string]bool{}
	for _, obj := range objects {
		pv, ok := obj.(*v1.PersistentVolume)
		if !ok || (pv.Status.Phase != "" && pv.Status.Phase != v1.VolumePending) {
			continue
		}
		if pv.Spec.ClaimRef == nil {
			pv.Status.Phase = v1.VolumeAvailable
			continue
		}
		pv.Status.Phase = v1.VolumeBound
		namespace := pv.Spec.ClaimRef.Namespace
		if namespace == "" {
			namespace = metav1.NamespaceDefault
		}
		claimed[namespace+"/"+pv.Spec.ClaimRef.Name+"/"+pv.Name] = true
	}
	for _, obj := range objects {
		pvc, ok := obj.(*v1.PersistentVolumeClaim)
		if !ok || (pvc.Status.Phase != "" && pvc.Status.Phase != v1.ClaimPending) || pvc.Spec.VolumeName == "" {
			continue
		}
		if claimed[pvc.Namespace+"/"+pvc.Name+"/"+pvc.Spec.VolumeName] {
			pvc.Status.Phase = v1.ClaimBound
			metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "pv.kubernetes.io/bind-completed", "yes")
		}
	}
	for _, obj := range objects {
		// what kube-apiserver's strategy gives a new claim (PrepareForCreate)
		if pvc, ok := obj.(*v1.PersistentVolumeClaim); ok && pvc.Status.Phase == "" {
			pvc.Status.Phase = v1.ClaimPending
		}
	}
}

// mergeLabelKeys does what the pod strategy's PrepareForCreate does to a new pod: each pod
// (anti-)affinity term's matchLabelKeys and mismatchLabelKeys, and each spread constraint's
// matchLabelKeys, become requirements on the pod's own label values in the term's selector
// (pkg/registry/core/pod/strategy.go: mutatePodAffinity, mutateTopologySpreadConstraints).
func mergeLabelKeys(pod *v1.Pod) {
	apply := func(selector *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator) {
		for _, key := range keys {
			if value, ok := pod.Labels[key]; ok {
				selector.MatchExpressions = append(selector.MatchExpressions,
					metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: []string{value}})
			}
		}
	}
	term := func(t *v1.PodAffinityTerm) {
		if t.LabelSelector == nil || (len(t.MatchLabelKeys) == 0 && len(t.MismatchLabelKeys) == 0) {
			return
		}
		apply(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn)
		apply(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
	}
	if a := pod.Spec.Affinity; a != nil && utilfeature.DefaultFeatureGate.Enabled(features.MatchLabelKeysInPodAffinity) {
		for _, terms := range []*v1.PodAffinity{a.PodAffinity} {
			if terms == nil {
				continue
			}
			for i := range terms.RequiredDuringSchedulingIgnoredDuringExecution {
				term(&terms.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range terms.PreferredDuringSchedulingIgnoredDuringExecution {
				term(&terms.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
		}
		if anti := a.PodAntiAffinity; anti != nil {
			for i := range anti.RequiredDuringSchedulingIgnoredDuringExecution {
				term(&anti.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
			for i := range anti.PreferredDuringSchedulingIgnoredDuringExecution {
				term(&anti.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
		}
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.MatchLabelKeysInPodTopologySpread) &&
		utilfeature.DefaultFeatureGate.Enabled(features.MatchLabelKeysInPodTopologySpreadSelectorMerge) {
		for i := range pod.Spec.TopologySpreadConstraints {
			c := &pod.Spec.TopologySpreadConstraints[i]
			if c.LabelSelector != nil && len(c.MatchLabelKeys) > 0 {
				apply(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn)
			}
		}
	}
}
