package podspec

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// ErrNoCommand is returned when neither the container nor its image says what to run.
var ErrNoCommand = errors.New("no command specified")

// CommandLine is the process a container runs: its command and args with
// $(VAR) references expanded from env (the kubelet's
// ExpandContainerCommandAndArgs), merged with the image's ENTRYPOINT and CMD
// as containerd's WithProcessArgs does:
//   - no command and no args: ENTRYPOINT + CMD;
//   - args only: ENTRYPOINT + args;
//   - command: command + args (CMD is ignored);
//   - an ENTRYPOINT of [""] counts as none.
//
// env must be the environment Kubernetes defines for the container (Plan.PodEnv),
// not the image's: the kubelet does not know the image's ENV when it expands.
func CommandLine(c *corev1.Container, imageEntrypoint, imageCmd []string, env []string) ([]string, error) {
	vars := envMap(env)
	var command, args []string
	for _, s := range c.Command {
		command = append(command, Expand(s, vars))
	}
	for _, s := range c.Args {
		args = append(args, Expand(s, vars))
	}
	if len(command) == 0 {
		if len(args) == 0 {
			args = append([]string{}, imageCmd...)
		}
		if !(len(imageEntrypoint) == 1 && imageEntrypoint[0] == "") {
			command = append([]string{}, imageEntrypoint...)
		}
	}
	if len(command) == 0 && len(args) == 0 {
		return nil, fmt.Errorf("container %q: %w", c.Name, ErrNoCommand)
	}
	return append(command, args...), nil
}
