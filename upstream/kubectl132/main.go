// kubectl v1.32 for the tests that compare what an older kubectl sends (its `autoscale` writes
// autoscaling/v1): the same main as k8s.io/kubernetes/cmd/kubectl, built from k8s.io/kubectl.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
