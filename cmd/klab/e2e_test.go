package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/internal/testenv"
)

// TestMain lets the test binary act as klab itself, so that a test can run
// klab in a process of its own: etcdctl keeps its flags in package state and
// exits the process on errors, so each run needs a fresh process, as it has
// from a shell.
func TestMain(m *testing.M) {
	if os.Getenv("KLAB_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// klabProcess runs klab in a child process.
func klabProcess(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "KLAB_TEST_MAIN=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run klab %v: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// TestCLIAgainstACluster runs the CLI's cluster commands against a real
// 3-member cluster started in this process, as klab up would.
func TestCLIAgainstACluster(t *testing.T) {
	testenv.EndToEnd(t)
	home := testHome(t)
	t.Setenv("ETCDCTL_ENDPOINTS", "")
	i18n.SetLang(i18n.English)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := lab.Up(ctx, lab.Spec{Name: "cli", Masters: 3, Speed: 1, Runtime: lab.RuntimeLocal, NoFsync: true}, lab.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background(), nil)

	code, stdout, stderr := klab(t, "status", "--name", "cli", "-o", "json")
	if code != 0 {
		t.Fatalf("status -o json exited %d: %s", code, stderr)
	}
	var st struct {
		Name          string   `json:"name"`
		Runtime       string   `json:"runtime"`
		EtcdEndpoints []string `json:"etcdEndpoints"`
		Members       []struct {
			Name     string `json:"name"`
			ID       string `json:"id"`
			State    string `json:"state"`
			Term     uint64 `json:"term"`
			IsLeader bool   `json:"isLeader"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, stdout)
	}
	if st.Name != "cli" || st.Runtime != "local" || len(st.EtcdEndpoints) != 3 || len(st.Members) != 3 {
		t.Errorf("status JSON = %+v", st)
	}

	// The KLAB_CLUSTER default reaches every command.
	t.Setenv("KLAB_CLUSTER", "cli")
	code, stdout, _ = klab(t, "status")
	if code != 0 || !strings.Contains(stdout, "MEMBER") || !strings.Contains(stdout, "master-3") {
		t.Errorf("status table (exit %d):\n%s", code, stdout)
	}

	code, stdout, stderr = klabProcess(t, "etcdctl", "put", "/registry/greeting", "hello")
	if code != 0 || strings.TrimSpace(stdout) != "OK" {
		t.Errorf("etcdctl put (exit %d): %q %s", code, stdout, stderr)
	}
	code, stdout, stderr = klabProcess(t, "etcdctl", "get", "/", "--prefix", "--keys-only")
	if code != 0 || !strings.Contains(stdout, "/registry/greeting") {
		t.Errorf("etcdctl get / --prefix --keys-only (exit %d): %q %s", code, stdout, stderr)
	}
	// The user's own endpoint wins over the preset one.
	code, stdout, stderr = klabProcess(t, "etcdctl", "--endpoints", st.EtcdEndpoints[2], "get", "/registry/greeting", "--print-value-only")
	if code != 0 || strings.TrimSpace(stdout) != "hello" {
		t.Errorf("etcdctl --endpoints get (exit %d): %q %s", code, stdout, stderr)
	}
	snap := filepath.Join(home, "snap.db")
	code, stdout, stderr = klabProcess(t, "etcdctl", "snapshot", "save", snap)
	if code != 0 || !strings.Contains(stderr, "from the leader") {
		t.Errorf("etcdctl snapshot save (exit %d): %s %s", code, stdout, stderr)
	}
	if fi, err := os.Stat(snap); err != nil || fi.Size() == 0 {
		t.Errorf("snapshot not saved: %v", err)
	}

	code, stdout, stderr = klab(t, "chaos", "kill", "leader")
	if code != 0 || !strings.Contains(stdout, "killed master-") || !strings.Contains(stdout, "the leader, term") {
		t.Errorf("chaos kill leader (exit %d): %s %s", code, stdout, stderr)
	}
	code, _, stderr = klab(t, "chaos", "pause", "etcd-9")
	if code == 0 || !strings.Contains(stderr, `unknown target "etcd-9"`) {
		t.Errorf("chaos pause etcd-9 (exit %d): %s", code, stderr)
	}
}
