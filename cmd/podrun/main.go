package main

import (
	"os"

	_ "github.com/containers/image/v5/copy"
	_ "github.com/containers/image/v5/transports/alltransports"
	_ "github.com/opencontainers/cgroups/devices"
	_ "github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter"
	_ "github.com/urfave/cli/v2"
	_ "github.com/vishvananda/netlink"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/api/resource"
	_ "sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libcontainer.Init()
	}
}
