// Command oracle runs upstream's kube-scheduler v1.37.2 in process on cluster files and prints, per
// file, one line of JSON: what became of each pending pod — its node, or its FailedScheduling
// message; the node its preemption nominated and the victims it deleted; of its last attempt, each
// node's Filter verdict (code, rejecting plugin, reasons), the plugins' raw, normalized and weighted
// scores per node and the total, and the top-scored nodes as a set, so that a comparison with
// kubesched does not depend on upstream's random pick among equally scored nodes.
//
// Usage: oracle [--config FILE] [--feature-gates A=true,B=false] CLUSTER.yaml...
//
//	oracle --list-feature-gates   (every gate kube-scheduler v1.37.2 knows, as JSON)
//	oracle --serve [--config FILE] ...   (file paths on stdin, one a line; a line of JSON each,
//	                                      {"oracleError": "..."} for a file it cannot run)
//
// A file holds the objects `kubesched simulate` reads (Nodes, Pods, PriorityClasses, PDBs,
// volumes, DRA objects, ...). The scheduler runs with upstream's default profile, or the profiles
// of the given KubeSchedulerConfiguration, against a fake clientset and shared informers; pods
// that name a node are there from the start, pending pods are created and scheduled one at a
// time in the file's order, each until it is bound or fails without preempting. The queue runs on a
// fake clock, stepped past a pod's backoff.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

func configuration(path string) (*config.KubeSchedulerConfiguration, error) {
	if path == "" {
		return latest.Default()
	}
	cfg, err := options.LoadConfigFromFile(klog.Background(), path)
	if err != nil {
		return nil, err
	}
	if errs := validation.ValidateKubeSchedulerConfiguration(cfg); errs != nil {
		return nil, errs
	}
	return cfg, nil
}

func main() {
	flags := flag.NewFlagSet("oracle", flag.ContinueOnError)
	configPath := flags.String("config", "", "a KubeSchedulerConfiguration file (default: upstream's default profile)")
	gates := flags.String("feature-gates", "", "kube-scheduler's --feature-gates, A=true,B=false")
	all := flags.Bool("together", false, "create every pending pod at once and schedule them in the queue's order (pod groups as one), each pod's outcome its node or last message")
	serve := flags.Bool("serve", false, "read cluster file paths from stdin, one a line, and answer each with its line of JSON as it is read (a test session starts the process once)")
	list := flags.Bool("list-feature-gates", false, "print every gate kube-scheduler knows (name, default, lock, stage, dependencies) as JSON, and exit")
	err := flags.Parse(os.Args[1:])
	if err == nil && *list {
		if err := listGates(os.Stdout); err != nil {
			os.Exit(1)
		}
		return
	}
	if err != nil || (flags.NArg() == 0) != *serve {
		fmt.Fprintln(os.Stderr, "usage: oracle [--config FILE] [--feature-gates A=true,B=false] [--together] CLUSTER.yaml... | --serve")
		os.Exit(2)
	}
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "oracle: %s: %s\n", what, strings.TrimSpace(err.Error()))
		os.Exit(1)
	}
	if *gates != "" {
		if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
			fail("--feature-gates", err)
		}
	}
	cfg, err := configuration(*configPath)
	if err != nil {
		fail(*configPath, err)
	}
	sink := newCapture()
	// the asynchronous preemption logs through the global logger
	klog.SetLoggerWithOptions(logr.New(sink), klog.ContextualLogger(true))
	encoder := json.NewEncoder(os.Stdout)
	if *serve {
		lines := bufio.NewScanner(os.Stdin)
		for lines.Scan() {
			path := strings.TrimSpace(lines.Text())
			if path == "" {
				continue
			}
			var answer any
			results, err := run(path, cfg, sink, *all)
			if err != nil {
				answer = map[string]string{"oracleError": fmt.Sprintf("%s: %s", path, strings.TrimSpace(err.Error()))}
			} else {
				answer = results
			}
			if err := encoder.Encode(answer); err != nil {
				os.Exit(1)
			}
		}
		return
	}
	for _, path := range flags.Args() {
		results, err := run(path, cfg, sink, *all)
		if err != nil {
			fail(path, err)
		}
		if err := encoder.Encode(results); err != nil {
			os.Exit(1)
		}
	}
}
