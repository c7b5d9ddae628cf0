package main

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// filterStatus is one node's verdict in a scheduling attempt: the first filter plugin that did not
// pass it, with the status code and reasons (the framework stops at that plugin), or Success.
type filterStatus struct {
	Code    string   `json:"code"`
	Plugin  string   `json:"plugin,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
}

// attempt is what the recording framework saw of one pod's latest scheduling attempt.
type attempt struct {
	filters    map[string]filterStatus
	raw        map[string]map[string]int64 // node -> plugin -> Score() before NormalizeScore
	normalized map[string]map[string]int64 // node -> plugin -> after NormalizeScore, before the weight
}

// recording is the profile's framework as the scheduling cycle sees it, keeping per pod each
// node's Filter status and each plugin's raw and normalized score; the plugins, the queue and
// preemption's dry runs keep the framework itself, so nothing they do is recorded or changed.
type recording struct {
	framework.Framework
	mu       sync.Mutex
	attempts map[string]*attempt
	weights  map[string]int64
}

func newRecording(f framework.Framework) *recording {
	weights := map[string]int64{}
	if plugins := f.ListPlugins(); plugins != nil {
		for _, p := range plugins.Score.Enabled {
			weights[p.Name] = int64(p.Weight)
		}
	}
	return &recording{Framework: f, attempts: map[string]*attempt{}, weights: weights}
}

func (r *recording) current(pod *v1.Pod) *attempt {
	key := pod.Namespace + "/" + pod.Name
	a := r.attempts[key]
	if a == nil {
		a = &attempt{filters: map[string]filterStatus{}, raw: map[string]map[string]int64{}, normalized: map[string]map[string]int64{}}
		r.attempts[key] = a
	}
	return a
}

// forget starts the pod's next attempt afresh.
func (r *recording) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.attempts, key)
}

func (r *recording) take(key string) *attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[key]
}

// RunFilterPluginsWithNominatedPods is the one call findNodesThatPassFilters makes per node.
func (r *recording) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	status := r.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
	verdict := filterStatus{Code: status.Code().String()}
	if !status.IsSuccess() {
		verdict.Plugin, verdict.Reasons = status.Plugin(), status.Reasons()
	}
	r.mu.Lock()
	r.current(pod).filters[info.Node().Name] = verdict
	r.mu.Unlock()
	return status
}

// RunScorePlugins is prioritizeNodes' call; its result carries the raw and the weighted scores.
func (r *recording) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	scores, status := r.Framework.RunScorePlugins(ctx, state, pod, nodes)
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.current(pod)
	for _, node := range scores {
		raw, normalized := map[string]int64{}, map[string]int64{}
		for _, s := range node.RawScores {
			raw[s.Name] = s.Score
		}
		for _, s := range node.Scores {
			if w := r.weights[s.Name]; w != 0 {
				normalized[s.Name] = s.Score / w
			}
		}
		a.raw[node.Name], a.normalized[node.Name] = raw, normalized
	}
	return scores, status
}
