// Package configured turns a KubeSchedulerConfiguration into the options scheduler.New takes, as
// kube-scheduler's app.Setup passes them (cmd/kube-scheduler/app/server.go), for the harnesses
// that build upstream's scheduler in process.
package configured

import (
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// Options are the configuration's profiles, parallelism, percentage of nodes to score and pod
// backoffs, followed by extra.
func Options(cfg *config.KubeSchedulerConfiguration, extra ...scheduler.Option) []scheduler.Option {
	return append([]scheduler.Option{
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithParallelism(cfg.Parallelism),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
	}, extra...)
}
