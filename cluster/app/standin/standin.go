// Package standin names the tutorial images klab can run in place of the
// real ones when a node cannot pull them (offline, or the local runtime,
// which never pulls): nginx and httpd become an HTTP server on port 80
// with a welcome page of klab's own (the app in --stand-in mode), and
// busybox, alpine and ubuntu become klab's shell (cluster/app/shell)
// running the pod's command and args, as the real images' /bin/sh would.
//
// The kubelet asks Lookup whether an image has a stand-in; the runtime
// asks Process what the container's process is, following the Kubernetes
// rules for command and args over the real image's entrypoint and cmd.
package standin

import (
	"path"
	"slices"

	"github.com/distribution/reference"
)

// Kind is what a stand-in runs.
type Kind int

const (
	// Web is an HTTP server on port 80 serving a welcome page.
	Web Kind = iota + 1
	// Shell is klab's shell running the container's command.
	Shell
)

// Image is a tutorial image klab stands in for.
type Image struct {
	// Name is the image's repository as students type it ("nginx").
	Name string
	Kind Kind
	// Entrypoint and Cmd are the real image's defaults, which a pod's
	// command and args replace as they would on the real image.
	Entrypoint, Cmd []string
	// Servers are the program names that mean "the server itself" in a
	// Web image's command line (nginx -g 'daemon off;'); any other
	// program runs in the shell.
	Servers []string
}

// images are the stand-ins, by their Docker Hub repository.
var images = map[string]Image{
	"docker.io/library/nginx": {Name: "nginx", Kind: Web,
		Entrypoint: []string{"/docker-entrypoint.sh"}, Cmd: []string{"nginx", "-g", "daemon off;"},
		Servers: []string{"nginx", "nginx-debug", "docker-entrypoint.sh"}},
	"docker.io/library/httpd": {Name: "httpd", Kind: Web,
		Cmd: []string{"httpd-foreground"}, Servers: []string{"httpd-foreground", "httpd"}},
	"docker.io/library/busybox": {Name: "busybox", Kind: Shell, Cmd: []string{"sh"}},
	"docker.io/library/alpine":  {Name: "alpine", Kind: Shell, Cmd: []string{"/bin/sh"}},
	"docker.io/library/ubuntu":  {Name: "ubuntu", Kind: Shell, Cmd: []string{"/bin/bash"}},
}

// Lookup returns the stand-in for an image reference, whatever its tag or
// digest ("nginx", "nginx:1.27-alpine", "docker.io/library/busybox@sha256:…");
// ok is false for any other image, and for references that do not parse.
func Lookup(image string) (img Image, ok bool) {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return Image{}, false
	}
	img, ok = images[ref.Name()]
	return img, ok
}

// Names lists the images klab stands in for, for messages.
func Names() []string {
	names := make([]string, 0, len(images))
	for _, img := range images {
		names = append(names, img.Name)
	}
	slices.Sort(names)
	return names
}

// Process is what a stand-in container runs.
type Process struct {
	// Web is set when the container serves the welcome page; Argv is
	// then empty.
	Web bool
	// Argv is the command line the shell runs otherwise: argv[0] is one
	// of the shell's applets (sh, sleep, echo, …) or another program,
	// which then fails to start as it would on a real image without it.
	Argv []string
}

// Process resolves a container's command line on the stand-in as a
// runtime does on the real image: a command replaces the entrypoint (and
// with it the image's cmd), args replace the cmd. A Web image whose
// command line names its server serves; anything else (sh -c '…') runs
// in the shell. bash, which klab's shell does not imitate, runs as sh.
func (img Image) Process(command, args []string) Process {
	var argv []string
	switch {
	case len(command) > 0:
		argv = slices.Concat(command, args)
	case len(args) > 0:
		argv = slices.Concat(img.Entrypoint, args)
	default:
		argv = slices.Concat(img.Entrypoint, img.Cmd)
	}
	if img.Kind == Web {
		// nginx's entrypoint script runs its arguments; what matters is
		// the program after it.
		if len(argv) > 1 && path.Base(argv[0]) == "docker-entrypoint.sh" {
			argv = argv[1:]
		}
		if len(argv) == 0 || slices.Contains(img.Servers, path.Base(argv[0])) {
			return Process{Web: true}
		}
	}
	argv = slices.Clone(argv)
	if len(argv) > 0 && path.Base(argv[0]) == "bash" {
		argv[0] = "sh"
	}
	return Process{Argv: argv}
}
