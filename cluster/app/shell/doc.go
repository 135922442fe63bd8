// Package shell is the POSIX shell klab's workload carries, so that
// `kubectl exec -it <pod> -- sh` works in a klab/app pod: the shell is
// mvdan.cc/sh's interpreter, and the everyday tools a lab needs are built
// in (ls, cat, env, hostname, sleep, ps, kill, mkdir, rm, touch, cp, mv,
// head, tail, grep, wc, date, tar, wget, curl, nslookup, dig, ...), as busybox
// builds them into one binary. A command that is neither a shell builtin
// nor one of the tools is not found (exit code 127): the shell never runs
// a program of the machine it runs on.
//
// The shell sees a filesystem view: with Config.Root set, every path
// (redirections, globs, the tools' arguments) is taken inside that
// directory, which the local runtime fills as a container's root is
// filled (/etc/hosts, /etc/resolv.conf, /etc/hostname, /tmp). In a Docker
// container Root is empty and the shell uses the container's own
// filesystem.
//
// Run takes a command line as a container runtime's exec does: `sh`,
// `sh -c 'script'`, or a tool by name (`ls /`, `tar cf - /tmp`, which is
// what kubectl cp runs). With a terminal (Config.TTY) the shell is
// interactive: it prompts, echoes and edits the line as a terminal's line
// discipline would, ends at Ctrl-D and interrupts a command at Ctrl-C.
package shell
