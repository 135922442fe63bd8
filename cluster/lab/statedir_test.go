package lab

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klab-dev/klab/assets/i18n"
)

// testHome points KLAB_HOME at a fresh directory short enough for unix
// socket paths (t.TempDir's names can pass the 104-byte limit).
func testHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("", "klab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("KLAB_HOME", home)
	return home
}

func TestHome(t *testing.T) {
	tests := []struct {
		name    string
		klab    string
		xdg     string
		home    string
		want    string
		wantErr bool
	}{
		{"KLAB_HOME first", "/srv/klab", "/x", "/h", "/srv/klab", false},
		{"XDG_STATE_HOME next", "", "/x", "/h", "/x/klab", false},
		{"relative XDG is ignored, as the spec says", "", "x", "/h", "/h/.local/state/klab", false},
		{"home last", "", "", "/h", "/h/.local/state/klab", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KLAB_HOME", tt.klab)
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			got, err := Home()
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Home() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStateDirRejectsBadNames(t *testing.T) {
	testHome(t)
	for _, name := range []string{"", "..", "a/b", "A", "-x"} {
		if _, err := StateDir(name); err == nil {
			t.Errorf("StateDir(%q) accepted a bad name", name)
		}
	}
}

func sampleInfo() *Info {
	return &Info{
		Version:       infoVersion,
		Spec:          Spec{Name: "demo", Masters: 1, Speed: 1, Runtime: RuntimeLocal},
		Name:          "demo",
		Runtime:       RuntimeLocal,
		EtcdEndpoints: []string{"http://127.0.0.11:2379"},
		Members:       []MemberInfo{{Name: "master-1", ID: "abc", ClientURL: "http://127.0.0.11:2379"}},
	}
}

func TestInfoRoundTrip(t *testing.T) {
	home := testHome(t)
	dir := filepath.Join(home, "demo")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadInfo("demo"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LoadInfo before writing = %v, want ErrNotFound", err)
	}
	first := sampleInfo()
	if err := writeInfo(dir, first); err != nil {
		t.Fatal(err)
	}
	second := sampleInfo()
	second.EtcdEndpoints = []string{"http://127.0.0.11:3000"}
	if err := writeInfo(dir, second); err != nil {
		t.Fatal(err)
	}
	got, err := LoadInfo("demo")
	if err != nil {
		t.Fatal(err)
	}
	if got.EtcdEndpoints[0] != "http://127.0.0.11:3000" || got.Members[0].Name != "master-1" {
		t.Errorf("LoadInfo = %+v, want the second write", got)
	}
	st, err := os.Stat(filepath.Join(dir, InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("cluster.json mode = %v, want 0600", st.Mode().Perm())
	}
	assertNoTempFiles(t, dir)
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestLoadInfoRejectsBadFiles(t *testing.T) {
	home := testHome(t)
	dir := filepath.Join(home, "demo")
	os.MkdirAll(dir, 0o700)
	tests := []struct {
		name    string
		content string
		wantKey string
	}{
		{"corrupt", "{not json", "lab.err.info-corrupt"},
		{"future layout", `{"version": 99}`, "lab.err.info-version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, InfoFile), []byte(tt.content), 0o600)
			_, err := LoadInfo("demo")
			if !errors.Is(err, &i18n.Error{Key: tt.wantKey}) {
				t.Fatalf("LoadInfo = %v, want key %s", err, tt.wantKey)
			}
			if !strings.Contains(err.Error(), InfoFile) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// staleSocket leaves a socket file behind as a killed klab up would.
func staleSocket(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, ControlSocket)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("socket file did not survive: %v", err)
	}
	return path
}

func TestStaleSocketMeansNotRunning(t *testing.T) {
	home := testHome(t)
	dir := filepath.Join(home, "demo")
	os.MkdirAll(dir, 0o700)
	ctx := context.Background()

	if _, err := Connect(ctx, "demo"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Connect without a socket = %v, want ErrNotRunning", err)
	}
	path := staleSocket(t, dir)
	if _, err := Connect(ctx, "demo"); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Connect to a stale socket = %v, want ErrNotRunning", err)
	}
	// klab up replaces a stale socket and takes the cluster over.
	ln, err := listenControl(dir, "demo")
	if err != nil {
		t.Fatalf("listenControl over a stale socket: %v", err)
	}
	defer ln.Close()
	// A second klab up finds the live socket and refuses.
	if _, err := listenControl(dir, "demo"); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second listenControl = %v, want ErrAlreadyRunning", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("live socket was removed: %v", err)
	}
}

func TestSocketPathTooLong(t *testing.T) {
	dir := filepath.Join(os.TempDir(), strings.Repeat("d", 100))
	if _, err := listenControl(dir, "demo"); !errors.Is(err, &i18n.Error{Key: "lab.err.socket-path"}) {
		t.Fatalf("listenControl with a long path = %v, want lab.err.socket-path", err)
	}
}

func TestDown(t *testing.T) {
	home := testHome(t)
	ctx := context.Background()

	t.Run("nothing to do", func(t *testing.T) {
		res, err := Down(ctx, "ghost", false, nil)
		if err != nil || res.WasRunning || res.Removed {
			t.Fatalf("Down of a missing cluster = %+v, %v", res, err)
		}
	})
	t.Run("stale state is removed", func(t *testing.T) {
		dir := filepath.Join(home, "stale")
		os.MkdirAll(filepath.Join(dir, "nodes", "master-1"), 0o700)
		writeInfo(dir, sampleInfo())
		staleSocket(t, dir)
		var events []StepEvent
		res, err := Down(ctx, "stale", false, func(ev StepEvent) { events = append(events, ev) })
		if err != nil || res.WasRunning || !res.Removed {
			t.Fatalf("Down = %+v, %v", res, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("state dir still there: %v", err)
		}
		if len(events) != 2 || events[1].Phase != StepDone {
			t.Errorf("steps = %+v, want one step started and done", events)
		}
	})
	t.Run("keep data", func(t *testing.T) {
		dir := filepath.Join(home, "kept")
		os.MkdirAll(dir, 0o700)
		writeInfo(dir, sampleInfo())
		res, err := Down(ctx, "kept", true, nil)
		if err != nil || res.Removed {
			t.Fatalf("Down --keep-data = %+v, %v", res, err)
		}
		if _, err := os.Stat(filepath.Join(dir, InfoFile)); err != nil {
			t.Errorf("cluster.json removed despite keep-data: %v", err)
		}
	})
}

func TestStatusOfStoppedCluster(t *testing.T) {
	home := testHome(t)
	dir := filepath.Join(home, "demo")
	os.MkdirAll(dir, 0o700)
	// Nothing listens on port 1: every member is unreachable.
	info := sampleInfo()
	info.Members[0].DebugURL = "http://127.0.0.1:1/debug/klab"
	writeInfo(dir, info)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := Status(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if st.Running || st.Answering() != 0 || st.Leader != "" {
		t.Errorf("status = %+v, want not running, nobody answering, no leader", st)
	}
	if m := st.Members[0]; m.State != HealthUnreachable || m.Health != HealthUnreachable || m.Error == "" {
		t.Errorf("member = %+v, want unreachable with an error", m)
	}
	if _, err := Status(ctx, "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Status of a missing cluster = %v, want ErrNotFound", err)
	}
}

// TestDownWithoutEngine: a Docker cluster whose engine does not answer is
// refused, its state dir kept, rather than forgotten with its containers
// left running.
func TestDownWithoutEngine(t *testing.T) {
	home := testHome(t)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-engine.sock"))
	dir := filepath.Join(home, "ondocker")
	os.MkdirAll(dir, 0o700)
	info := sampleInfo()
	info.Runtime = RuntimeDocker
	writeInfo(dir, info)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := Down(ctx, "ondocker", false, nil)
	if !errors.Is(err, &i18n.Error{Key: "lab.err.down-no-engine"}) || res.Removed {
		t.Fatalf("Down with no engine = %+v, %v; want lab.err.down-no-engine and nothing removed", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); err != nil {
		t.Errorf("cluster.json gone after a refused down: %v", err)
	}

	// A local cluster needs no engine: it goes as before.
	local := filepath.Join(home, "onlocal")
	os.MkdirAll(local, 0o700)
	writeInfo(local, sampleInfo())
	if res, err := Down(ctx, "onlocal", false, nil); err != nil || !res.Removed {
		t.Fatalf("Down of a local cluster with no engine = %+v, %v", res, err)
	}
}
