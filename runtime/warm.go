package runtime

import (
	"encoding/json"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"github.com/podrun/podrun/internal/imageref"
	"github.com/podrun/podrun/network"
	"github.com/podrun/podrun/store"
)

// Warm does, in a supervisor that is idle until its pod comes (a standby),
// the first-use work that a pod's start would otherwise pay on its critical
// path: encoding/json's reflection over the pod record's types, the network
// state's and libcontainer's (its container config goes to every init as
// JSON, libcontainer.(*initProcess).start, and its state is saved as JSON),
// and the image reference grammar.
func Warm() {
	store.WarmCodecs()
	network.WarmCodecs()
	_, _ = json.Marshal(&configs.Config{})
	_, _ = json.Marshal(&libcontainer.State{})
	imageref.Warm()
}
