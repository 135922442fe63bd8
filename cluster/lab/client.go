package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
)

// Client talks to the control API of a running cluster.
type Client struct {
	name string
	path string
	hc   *http.Client
}

// Connect finds the `klab up` process running the named cluster. It fails
// with an error matching ErrNotRunning when nobody answers on the control
// socket, including when the socket is left over from a process that died.
func Connect(ctx context.Context, name string) (*Client, error) {
	dir, err := StateDir(name)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ControlSocket)
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "unix", path)
	if err != nil {
		if isNotListening(err) {
			return nil, i18n.NewError("lab.err.not-running", name)
		}
		return nil, i18n.Wrap(err, "lab.err.socket", path)
	}
	conn.Close()
	return &Client{
		name: name,
		path: path,
		hc: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", path)
			},
		}},
	}, nil
}

// Status asks the running process for the cluster's phase and components.
func (c *Client) Status(ctx context.Context) (*ControlStatus, error) {
	var st ControlStatus
	if err := c.call(ctx, http.MethodGet, pathStatus, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Chaos runs a chaos operation in the running process.
func (c *Client) Chaos(ctx context.Context, req ChaosRequest) (*ChaosResult, error) {
	var res ChaosResult
	if err := c.call(ctx, http.MethodPost, pathChaos, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Shutdown asks the running process to stop the cluster and exit. It
// returns once the request is accepted; WaitStopped waits for the end.
func (c *Client) Shutdown(ctx context.Context, reason string) error {
	return c.call(ctx, http.MethodPost, pathShutdown, ShutdownRequest{Reason: reason}, nil)
}

// WaitStopped waits until the running process has stopped the cluster and
// closed its control socket, polling every 50 ms: a process ending gives no
// event another process could wait on.
func (c *Client) WaitStopped(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := net.DialTimeout("unix", c.path, time.Second)
		if err != nil {
			if isNotListening(err) {
				return nil
			}
			return i18n.Wrap(err, "lab.err.socket", c.path)
		}
		conn.Close()
		select {
		case <-ctx.Done():
			return i18n.Wrap(ctx.Err(), "lab.err.stop-timeout", c.name)
		case <-tick.C:
		}
	}
}

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s request: %w", path, err)
		}
		body = bytes.NewReader(data)
	}
	// The host is ignored: the transport always dials the socket.
	req, err := http.NewRequestWithContext(ctx, method, "http://klab"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", string(i18n.Current()))
	resp, err := c.hc.Do(req)
	if err != nil {
		return i18n.Wrap(err, "lab.err.control", c.name)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e apiError
		if json.NewDecoder(resp.Body).Decode(&e) != nil || e.Error == "" {
			return i18n.NewError("lab.err.control-status", c.name, resp.Status)
		}
		return &remoteError{msg: e.Error, key: e.Key}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return i18n.Wrap(err, "lab.err.control", c.name)
	}
	return nil
}

// remoteError is an error the running process reported, already rendered in
// this process's language. It matches the sentinel with the same key.
type remoteError struct {
	msg, key string
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool {
	t, ok := target.(*i18n.Error)
	return ok && e.key != "" && t.Key == e.key
}

// DownResult says what Down did.
type DownResult struct {
	// WasRunning: a `klab up` process ran the cluster and was stopped.
	WasRunning bool
	// Removed: the state dir was removed.
	Removed bool
	// Dir is the cluster's state dir.
	Dir string
}

// Down stops the named cluster if a `klab up` process runs it, and removes
// its state dir unless keepData is set. A cluster that does not exist is not
// an error: there is nothing to do, and DownResult says so.
func Down(ctx context.Context, name string, keepData bool, p Progress) (DownResult, error) {
	dir, err := StateDir(name)
	if err != nil {
		return DownResult{}, err
	}
	res := DownResult{Dir: dir}
	c, err := Connect(ctx, name)
	switch {
	case err == nil:
		res.WasRunning = true
		err = p.step(i18n.M("down.step.stop", name), func() error {
			if err := c.Shutdown(ctx, "down"); err != nil {
				return err
			}
			return c.WaitStopped(ctx)
		})
		if err != nil {
			return res, err
		}
	case !errors.Is(err, ErrNotRunning):
		return res, err
	}
	if keepData {
		// A Docker cluster keeps running without a `klab up` process:
		// keeping its data means stopping its containers.
		if info, err := readInfo(dir); err == nil && info.Runtime == RuntimeDocker {
			if err := Stop(ctx, name, p); err != nil {
				return res, err
			}
			res.WasRunning = true
		}
		return res, nil
	}
	// Docker objects go by label, whatever the state dir says: a `klab up`
	// killed half-way leaves containers and no cluster.json.
	removed, err := removeDocker(ctx, name, p)
	if err != nil {
		return res, err
	}
	res.WasRunning = res.WasRunning || removed
	res.Removed = removed
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	err = p.step(i18n.M("down.step.remove", dir), func() error {
		if err := os.RemoveAll(dir); err != nil {
			return i18n.Wrap(err, "lab.err.remove", dir)
		}
		return nil
	})
	res.Removed = err == nil
	return res, err
}
