package dockercri

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/klab-dev/klab/cluster/kubelet/cri"
	"github.com/klab-dev/klab/cluster/runtime/docker/labels"
)

// ExecInContainer runs cmd in the container through the engine's exec
// API (create, attach, which starts it, resize, inspect for the exit
// code), as dockershim did: the image's own binaries run, in the
// container's namespaces.
func (r *Runtime) ExecInContainer(ctx context.Context, id string, cmd []string, streams cri.Streams) (int, error) {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	if info.State == nil || !info.State.Running {
		return 0, fmt.Errorf("container %s is not running", id)
	}
	exec, err := r.docker.ContainerExecCreate(ctx, info.ID, container.ExecOptions{
		Cmd: cmd, Tty: streams.TTY,
		AttachStdin: streams.Stdin != nil, AttachStdout: streams.Stdout != nil, AttachStderr: streams.Stderr != nil,
	})
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	resp, err := r.docker.ContainerExecAttach(ctx, exec.ID, container.ExecAttachOptions{Tty: streams.TTY})
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	defer resp.Close()
	go resizeLoop(ctx, streams.Resize, func(size cri.TerminalSize) error {
		return r.docker.ContainerExecResize(ctx, exec.ID, container.ResizeOptions{Height: uint(size.Height), Width: uint(size.Width)})
	})
	if err := pump(ctx, resp, streams); err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	inspect, err := r.docker.ContainerExecInspect(context.WithoutCancel(ctx), exec.ID)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	return inspect.ExitCode, nil
}

// AttachContainer attaches to the container's main process from now on.
func (r *Runtime) AttachContainer(ctx context.Context, id string, streams cri.Streams) error {
	info, err := r.inspect(ctx, id, labels.RolePod)
	if err != nil {
		return fmt.Errorf("attach to container %s: %w", id, err)
	}
	resp, err := r.docker.ContainerAttach(ctx, info.ID, container.AttachOptions{
		Stream: true, Stdin: streams.Stdin != nil && info.Config != nil && info.Config.OpenStdin,
		Stdout: streams.Stdout != nil, Stderr: streams.Stderr != nil,
	})
	if err != nil {
		return fmt.Errorf("attach to container %s: %w", id, err)
	}
	defer resp.Close()
	go resizeLoop(ctx, streams.Resize, func(size cri.TerminalSize) error {
		return r.docker.ContainerResize(ctx, info.ID, container.ResizeOptions{Height: uint(size.Height), Width: uint(size.Width)})
	})
	tty := info.Config != nil && info.Config.Tty
	if info.Config == nil || !info.Config.OpenStdin {
		streams.Stdin = nil
	}
	streams.TTY = tty
	if err := pump(ctx, resp, streams); err != nil {
		return fmt.Errorf("attach to container %s: %w", id, err)
	}
	return nil
}

// pump copies the client's stdin into the hijacked connection (closing
// its write side at EOF, which the process sees as the end of its input)
// and the connection's output to stdout and stderr, demultiplexed unless
// a TTY joins them. It returns when the output ends or ctx is done.
func pump(ctx context.Context, resp types.HijackedResponse, streams cri.Streams) error {
	if streams.Stdin != nil {
		go func() {
			io.Copy(resp.Conn, streams.Stdin)
			// A terminal has no end of input (Ctrl-D is a key); closing
			// the pty's input would hang the session up before its
			// output is read.
			if !streams.TTY {
				resp.CloseWrite()
			}
		}()
	}
	stdout, stderr := streams.Stdout, streams.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	done := make(chan error, 1)
	go func() {
		var err error
		if streams.TTY {
			_, err = io.Copy(stdout, resp.Reader)
		} else {
			_, err = stdcopy.StdCopy(stdout, stderr, resp.Reader)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		resp.Close()
		<-done
		return nil
	}
}

// resizeLoop passes terminal sizes on until the channel closes.
func resizeLoop(ctx context.Context, sizes <-chan cri.TerminalSize, resize func(cri.TerminalSize) error) {
	if sizes == nil {
		return
	}
	for {
		select {
		case size, ok := <-sizes:
			if !ok {
				return
			}
			_ = resize(size) // a resize racing the exit fails harmlessly
		case <-ctx.Done():
			return
		}
	}
}
