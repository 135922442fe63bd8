package inprocess

import (
	"fmt"
	"path"
	"slices"
)

// Container start failures, as containerd reports them: the container is
// left exited with this reason and exit code (128, Docker's code for a
// container that could not start), and the message says why.
const (
	ReasonStartError   = "StartError"
	ExitCodeStartError = 128
)

// entrypoints are the images' entrypoints, what runs when a container
// gives no command: the app in klab/app, the klab binary in klab/node.
var entrypoints = map[string][]string{
	AppRepository:  {"app"},
	NodeRepository: {"klab"},
}

// appArgs returns the app's arguments for a container, or why the image
// cannot run what the container asks for. As in a real container, a
// command replaces the image's entrypoint and args follow it. The images
// hold one program, the klab binary, which runs the app as `app` (klab/app's
// entrypoint) or as `klab component app`. Its shell (cluster/app/shell)
// serves kubectl exec; a container's own process is the app.
func appArgs(image imageRef, command, args []string) ([]string, error) {
	argv := slices.Concat(command, args)
	if len(command) == 0 {
		argv = slices.Concat(entrypoints[image.repo], args)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("unable to start container process: no command given and image %s has no entrypoint", image)
	}
	switch path.Base(argv[0]) {
	case "app":
		return argv[1:], nil
	case "klab":
		if len(argv) >= 3 && argv[1] == "component" && argv[2] == "app" {
			return argv[3:], nil
		}
		return nil, fmt.Errorf("unable to start container process: %q: a pod's container can run only the app (command [\"klab\", \"component\", \"app\"], or image %s with no command)",
			argv, AppRepository)
	}
	return nil, fmt.Errorf("unable to start container process: exec: %q: executable file not found in $PATH: image %s holds only the klab app and klab's shell tools (sh, sleep, echo, wget, ...); leave command empty and give the app's flags as args, e.g. [\"--exit-after=5s\"] for a job, or run a tool, e.g. [\"sh\", \"-c\", \"...\"]",
		argv[0], image)
}
