package main

import (
	"encoding/json"
	"io"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	// kube-scheduler's command registers the logging and metrics gates beside Kubernetes' own
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// gate is one feature gate as kube-scheduler v1.37.2's --feature-gates knows it, at its own
// (emulated) version.
type gate struct {
	Name         string   `json:"name"`
	Default      bool     `json:"default"`
	Locked       bool     `json:"lockToDefault,omitempty"`
	Stage        string   `json:"stage"`
	Dependencies []string `json:"dependencies,omitempty"`
}

// listGates writes every gate kube-scheduler accepts, sorted by name, as JSON.
func listGates(w io.Writer) error {
	fg := utilfeature.DefaultMutableFeatureGate
	deps := map[featuregate.Feature][]featuregate.Feature{}
	if d, ok := fg.(interface {
		Dependencies() map[featuregate.Feature][]featuregate.Feature
	}); ok {
		deps = d.Dependencies()
	}
	var out []gate
	for name, spec := range fg.GetAll() {
		g := gate{Name: string(name), Default: spec.Default, Locked: spec.LockToDefault, Stage: string(spec.PreRelease)}
		if g.Stage == "" {
			g.Stage = "GA"
		}
		names := sets.New[string]()
		for _, dep := range deps[name] {
			names.Insert(string(dep))
		}
		g.Dependencies = sets.List(names)
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}
