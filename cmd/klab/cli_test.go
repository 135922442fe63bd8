package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
	"github.com/klab-dev/klab/cluster/runtime"
)

// klab runs the CLI in-process and returns its exit code and output.
func klab(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// testHome gives the test its own KLAB_HOME, short enough for sockets.
func testHome(t *testing.T) string {
	t.Helper()
	home, err := os.MkdirTemp("", "klab")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("KLAB_HOME", home)
	t.Setenv("KLAB_CLUSTER", "")
	return home
}

func TestUsageErrors(t *testing.T) {
	testHome(t)
	i18n.SetLang(i18n.English)
	// No engine answers here, whatever this machine runs.
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	tests := []struct {
		name string
		args []string
		want []string // fragments of stderr
	}{
		{"unknown flag", []string{"up", "--bogus"}, []string{"bad flag for klab up", "unknown flag: --bogus"}},
		{"bad flag value", []string{"up", "--masters", "three"}, []string{"bad flag for klab up", "--masters"}},
		{"no masters", []string{"up", "--masters", "0"}, []string{"--masters must be between 1 and 7, not 0"}},
		{"bad speed", []string{"up", "--speed", "-1"}, []string{"--speed must be greater than 0"}},
		{"bad runtime", []string{"up", "--runtime", "podman"}, []string{`--runtime must be auto, local or docker, not "podman"`}},
		{"docker without an engine", []string{"up", "--runtime", "docker"}, []string{"the Docker engine does not answer", "--runtime local"}},
		{"start of nothing", []string{"start", "--name", "ghost"}, []string{`there is no cluster "ghost"`}},
		{"stop of nothing", []string{"stop", "--name", "ghost"}, []string{`there is no cluster "ghost"`}},
		{"down all and a name", []string{"down", "--all", "--name", "x"}, []string{"--all removes every cluster"}},
		{"bad name", []string{"up", "--name", "My_Lab"}, []string{`cluster name "My_Lab" is not valid`}},
		{"stray argument", []string{"up", "now"}, []string{`klab up takes no arguments, but got "now"`}},
		{"unknown command", []string{"upp"}, []string{`unknown command "upp" for klab`}},
		{"chaos without target", []string{"chaos", "kill"}, []string{"klab chaos kill takes exactly 1 argument (<target>), but got 0"}},
		{"unknown chaos op", []string{"chaos", "explode", "etcd-1"}, []string{`unknown command "explode" for klab chaos`}},
		{"heal with a target", []string{"chaos", "heal", "etcd-1"}, []string{"klab chaos heal takes no arguments"}},
		{"status output", []string{"status", "-o", "yaml"}, []string{`--output must be table or json, not "yaml"`}},
		{"status of nothing", []string{"status", "--name", "ghost"}, []string{`there is no cluster "ghost"`, "klab up --name ghost"}},
		{"chaos on a stopped cluster", []string{"chaos", "kill", "leader", "--name", "ghost"}, []string{`cluster "ghost" is not running`}},
		{"etcdctl on nothing", []string{"etcdctl", "--name", "ghost", "get", "x"}, []string{`there is no cluster "ghost"`}},
		{"etcdctl bad name", []string{"etcdctl", "--name=../x", "get", "x"}, []string{"is not valid"}},
		{"component etcd without --node", []string{"component", "etcd"}, []string{"--node is required"}},
		{"clock step not a number", []string{"clock", "step", "many"}, []string{`step takes a number of ticks from 1 to 1000, not "many"`}},
		{"clock speed too slow", []string{"clock", "speed", "1000"}, []string{`speed takes a slowdown from 1 to 100`}},
		{"unknown theme", []string{"--theme", "neon"}, []string{`--theme "neon" is not a theme; the themes are standard, contrast`}},
		{"cast without a terminal", []string{"--cast", "lab.cast"}, []string{"klab --cast opens the TUI, which needs a terminal"}},
		{"clock of nothing", []string{"clock", "pause", "--name", "ghost"}, []string{`there is no cluster "ghost"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := klab(t, tt.args...)
			if code == 0 {
				t.Fatalf("klab %v succeeded, want a failure", tt.args)
			}
			if !strings.HasPrefix(stderr, "error: ") {
				t.Errorf("stderr %q does not start with the error prefix", stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
		})
	}
}

func TestSucceedsWithNothingToDo(t *testing.T) {
	testHome(t)
	i18n.SetLang(i18n.English)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bare klab introduces itself", nil, "Start with `klab up`"},
		{"bare klab prints help", nil, "Available Commands:"},
		{"help", []string{"--help"}, "chaos"},
		{"help command", []string{"help", "status"}, "klab status [flags]"},
		{"version", []string{"--version"}, "klab version dev"},
		{"down of nothing", []string{"down", "--name", "ghost"}, `There is no cluster "ghost"`},
		{"chaos alone shows its help", []string{"chaos"}, "leader"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := klab(t, tt.args...)
			if code != 0 {
				t.Fatalf("klab %v exited %d: %s", tt.args, code, stderr)
			}
			if !strings.Contains(stdout, tt.want) {
				t.Errorf("stdout does not contain %q:\n%s", tt.want, stdout)
			}
		})
	}
}

func TestHelpInKorean(t *testing.T) {
	defer i18n.SetLang(i18n.English)
	i18n.SetLang(i18n.Korean)
	code, stdout, _ := klab(t, "up", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"사용법:", "플래그:", "마스터 노드", "up 도움말"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("Korean help lacks %q:\n%s", want, stdout)
		}
	}
	for _, unwanted := range []string{"Usage:", "Flags:", "help for"} {
		if strings.Contains(stdout, unwanted) {
			t.Errorf("Korean help still has English %q", unwanted)
		}
	}
	code, _, stderr := klab(t, "up", "--masters", "0")
	if code == 0 || !strings.Contains(stderr, "오류: --masters는 1 이상 7 이하여야 합니다") {
		t.Errorf("Korean error = %q", stderr)
	}
}

// TestRuntimeKeys checks the keys the CLI builds at run time, which the
// catalogue's source scan cannot see.
func TestRuntimeKeys(t *testing.T) {
	var keys []string
	for _, op := range lab.ChaosOps {
		if op != lab.OpPartition && op != lab.OpHeal {
			keys = append(keys, "chaos."+string(op)+".short", "chaos.done."+string(op))
		}
	}
	for _, s := range []runtime.State{runtime.StateCreated, runtime.StateRunning, runtime.StatePaused,
		runtime.StateStopped, runtime.StateKilled, runtime.StateExited} {
		keys = append(keys, "state."+string(s))
	}
	for _, r := range []string{"StateLeader", "StateFollower", "StateCandidate", "StatePreCandidate"} {
		keys = append(keys, "state."+roleWord(r))
	}
	for _, h := range []string{lab.HealthHealthy, lab.HealthNoLeader, lab.HealthPaused, lab.HealthUnreachable} {
		keys = append(keys, "health."+h, "state."+lab.HealthUnreachable)
	}
	for _, k := range keys {
		for _, l := range i18n.Langs {
			if !l.Has(k) {
				t.Errorf("%s catalogue lacks %s", l, k)
			}
		}
	}
}

// roleWord mirrors how lab names raft states, through its JSON.
func roleWord(raftState string) string {
	return map[string]string{
		"StateLeader": "leader", "StateFollower": "follower",
		"StateCandidate": "candidate", "StatePreCandidate": "pre-candidate",
	}[raftState]
}

func TestTakeNameFlag(t *testing.T) {
	t.Setenv("KLAB_CLUSTER", "")
	tests := []struct {
		name     string
		args     []string
		wantName string
		wantArgs string
	}{
		{"none", []string{"get", "foo"}, "klab", "[get foo]"},
		{"separate", []string{"--name", "lab2", "get", "foo"}, "lab2", "[get foo]"},
		{"equals, after the command", []string{"get", "foo", "--name=lab3"}, "lab3", "[get foo]"},
		{"after -- it is etcdctl's", []string{"put", "--", "--name", "x"}, "klab", "[put -- --name x]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, args := takeNameFlag(tt.args)
			if name != tt.wantName || strings.Join(args, " ") != strings.Trim(tt.wantArgs, "[]") {
				t.Errorf("takeNameFlag(%v) = %s, %v; want %s, %s", tt.args, name, args, tt.wantName, tt.wantArgs)
			}
		})
	}
}

func TestEtcdctlArgs(t *testing.T) {
	tests := []struct {
		name         string
		args         []string
		endpoints    bool
		snapshotSave bool
	}{
		{"plain get", []string{"get", "/", "--prefix", "--keys-only"}, false, false},
		{"endpoints flag", []string{"--endpoints", "http://x:2379", "get", "a"}, true, false},
		{"endpoints equals", []string{"get", "a", "--endpoints=http://x:2379"}, true, false},
		{"discovery", []string{"-d", "example.com", "get", "a"}, true, false},
		{"snapshot save", []string{"snapshot", "save", "b.db"}, false, true},
		{"snapshot save with flags", []string{"-w", "json", "snapshot", "--command-timeout=10s", "save", "b.db"}, false, true},
		{"snapshot status", []string{"snapshot", "status", "b.db"}, false, false},
		{"a key named snapshot", []string{"put", "--", "snapshot", "save"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hasEndpointsFlag(tt.args); got != tt.endpoints {
				t.Errorf("hasEndpointsFlag = %v, want %v", got, tt.endpoints)
			}
			if got := isSnapshotSave(tt.args); got != tt.snapshotSave {
				t.Errorf("isSnapshotSave = %v, want %v", got, tt.snapshotSave)
			}
		})
	}
}

func TestTableAlignsWideText(t *testing.T) {
	var tb table
	tb.add("멤버", "역할")
	tb.add("master-1", "리더")
	var b bytes.Buffer
	tb.write(&b)
	want := "멤버       역할\nmaster-1   리더\n"
	if b.String() != want {
		t.Errorf("table =\n%q\nwant\n%q", b.String(), want)
	}
}
