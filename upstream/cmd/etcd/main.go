// Command etcd is etcd v3.7.0's server, built from its Go module: the store behind kube-apiserver
// in kubesched's comparisons with upstream.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
