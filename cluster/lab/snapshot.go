package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/etcd"
	"github.com/klab-dev/klab/cluster/runtime"
)

// SnapshotsDirName is the folder of the state dir that keeps a lab's etcd
// snapshots (klab snapshot save without a file, the lessons' step
// snapshots).
const SnapshotsDirName = "snapshots"

// snapshotExt is the extension klab gives the snapshots it names.
const snapshotExt = ".db"

// SnapshotsDir returns the folder that keeps the named lab's snapshots.
func SnapshotsDir(name string) (string, error) {
	dir, err := StateDir(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, SnapshotsDirName), nil
}

// SnapshotFile is one snapshot kept in the state dir.
type SnapshotFile struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
}

// SaveSnapshot takes an etcd snapshot of the named lab the way `etcdctl
// snapshot save` does — the Maintenance Snapshot RPC of the leader, whose
// copy is the newest, streamed into a file with its SHA-256 — and returns the
// file's path. An empty path saves into the state dir's snapshots folder
// under a name made from the time.
func SaveSnapshot(ctx context.Context, name, path string) (string, error) {
	info, err := LoadInfo(name)
	if err != nil {
		return "", err
	}
	if path == "" {
		dir, err := SnapshotsDir(name)
		if err != nil {
			return "", err
		}
		path = filepath.Join(dir, time.Now().UTC().Format("20060102-150405.000")+snapshotExt)
	} else if !strings.Contains(path, string(filepath.Separator)) && filepath.Ext(path) == "" {
		// A bare name is kept with the others.
		dir, err := SnapshotsDir(name)
		if err != nil {
			return "", err
		}
		path = filepath.Join(dir, path+snapshotExt)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", i18n.Wrap(err, "snapshot.err.save", path)
	}
	endpoint, err := snapshotEndpoint(ctx, info.Members)
	if err != nil {
		return "", err
	}
	cfg, err := info.EtcdCredentials.ClientConfig([]string{endpoint})
	if err != nil {
		return "", i18n.Wrap(err, "snapshot.err.save", path)
	}
	if _, err := clientsnapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		return "", i18n.Wrap(err, "snapshot.err.save", path)
	}
	return path, nil
}

// snapshotEndpoint picks the leader's client URL, or any member's that
// answers when there is no leader.
func snapshotEndpoint(ctx context.Context, members []MemberInfo) (string, error) {
	answers := fetchAll(ctx, members)
	if i, ok := leaderOf(answers); ok {
		return members[i].ClientURL, nil
	}
	for i, a := range answers {
		if a.err == nil {
			return members[i].ClientURL, nil
		}
	}
	return "", ErrNoLeader
}

// ListSnapshots lists the snapshots kept in the named lab's state dir,
// oldest first.
func ListSnapshots(name string) ([]SnapshotFile, error) {
	dir, err := SnapshotsDir(name)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, i18n.Wrap(err, "snapshot.err.list", dir)
	}
	var out []SnapshotFile
	for _, e := range ents {
		if e.IsDir() || filepath.Ext(e.Name()) != snapshotExt {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, SnapshotFile{Name: strings.TrimSuffix(e.Name(), snapshotExt), Path: filepath.Join(dir, e.Name()), Size: fi.Size(), ModTime: fi.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ModTime.Equal(out[j].ModTime) {
			return out[i].ModTime.Before(out[j].ModTime)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// ResolveSnapshot turns what the user typed — a file, or the name of a
// snapshot kept in the state dir — into a path, and checks the file is a
// whole snapshot.
func ResolveSnapshot(name, arg string) (string, error) {
	path := arg
	if _, err := os.Stat(arg); err != nil && !strings.Contains(arg, string(filepath.Separator)) {
		if dir, derr := SnapshotsDir(name); derr == nil {
			for _, cand := range []string{filepath.Join(dir, arg), filepath.Join(dir, arg+snapshotExt)} {
				if _, err := os.Stat(cand); err == nil {
					path = cand
					break
				}
			}
		}
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if _, err := etcd.VerifySnapshot(path); err != nil {
		return "", snapshotError(err)
	}
	return path, nil
}

// snapshotError says in the user's language what is wrong with a snapshot
// file and where it is.
func snapshotError(err error) error {
	var se *etcd.SnapshotError
	if !errors.As(err, &se) {
		return err
	}
	if errors.Is(err, etcd.ErrSnapshotMissing) {
		return i18n.NewError("snapshot.err.missing", se.Path)
	}
	return i18n.NewError("snapshot.err.corrupt", se.Path, se.Detail)
}

// RestoreResult reports a restore.
type RestoreResult struct {
	Snapshot     string        `json:"snapshot"`
	OldClusterID string        `json:"oldClusterID"`
	ClusterID    string        `json:"clusterID"`
	Term         uint64        `json:"term"`
	Leader       string        `json:"leader"`
	Elapsed      time.Duration `json:"elapsed"`
	// Stages is how long each stage took, in order: "stop", "restore",
	// "etcd" (started, a leader elected), "apiservers" (and then the load
	// balancer), "others".
	Stages []RestoreStage `json:"stages,omitempty"`
}

// RestoreStage is one stage of a restore and how long it took.
type RestoreStage struct {
	Name    string        `json:"name"`
	Elapsed time.Duration `json:"elapsed"`
}

// RestoreRequest asks the running process to restore a snapshot.
type RestoreRequest struct {
	Snapshot string `json:"snapshot"`
}

const pathRestore = "/v1/restore"

// Restore restores the named lab's etcd from a snapshot file, in the process
// that runs the lab (see Cluster.Restore).
func Restore(ctx context.Context, name, path string) (*RestoreResult, error) {
	if info, err := LoadInfo(name); err == nil && info.Runtime == RuntimeDocker {
		c, err := attachInfo(ctx, info, slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, err
		}
		return c.Restore(ctx, path)
	}
	cl, err := Connect(ctx, name)
	if err != nil {
		return nil, err
	}
	var res RestoreResult
	if err := cl.call(ctx, http.MethodPost, pathRestore, RestoreRequest{Snapshot: path}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Restore restores etcd from a snapshot the way an operator does: every
// component stopped (the API servers' clients, then the API servers, so
// that nothing keeps a watch cache of the old cluster, then etcd), a fresh data dir restored
// from the snapshot for every member with a new cluster token (a new cluster
// ID; the members keep their peer URLs), the members started together as a
// new cluster that elects a leader in a new term, then the API servers,
// which list and watch the restored keys, and the controllers and kubelets,
// which reconcile the cluster to them. The old data dirs are kept beside the
// new ones as etcd.before-restore. On Docker each component is stopped and
// started again inside its container (runtime.StandBy), as a restarted
// process on the same machine, not with a new container.
func (c *Cluster) Restore(ctx context.Context, path string) (*RestoreResult, error) {
	start := time.Now()
	if _, err := etcd.VerifySnapshot(path); err != nil {
		return nil, snapshotError(err)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	info := c.Info()
	if info == nil {
		return nil, ErrStarting
	}
	res := &RestoreResult{Snapshot: path}
	if st := fetchAll(ctx, c.members); len(st) > 0 {
		for _, a := range st {
			if a.err == nil {
				res.OldClusterID = a.status.ClusterID
				break
			}
		}
	}
	infos, err := c.rt.List(ctx)
	if err != nil {
		return nil, err
	}
	var running []runtime.Ref
	for _, ci := range infos {
		if ci.State == runtime.StateRunning || ci.State == runtime.StatePaused || ci.Ref.Component == runtime.ComponentEtcd {
			running = append(running, ci.Ref)
		}
	}
	// Stopped in the reverse of the start order: the API servers' clients
	// first, while the API servers still answer, so that the leaders of
	// the scheduler and the controller manager release their Leases and
	// shut down gracefully (with no API server their release waits until
	// the engine kills them, ten seconds on Docker); then the API servers
	// and the load balancer; etcd last.
	var stopGroups [3][]runtime.ComponentInfo
	for _, ci := range infos {
		switch ci.Ref.Component {
		case runtime.ComponentEtcd:
			stopGroups[2] = append(stopGroups[2], ci)
		case runtime.ComponentAPIServer, runtime.ComponentLB:
			stopGroups[1] = append(stopGroups[1], ci)
		default:
			stopGroups[0] = append(stopGroups[0], ci)
		}
	}
	//
	// Where the runtime can (runtime.StandBy: Docker), each component is
	// stopped and later started again inside its container rather than
	// with it, sparing 25 container restarts, which cost the engine more
	// than everything else here; a component it cannot stand down (paused,
	// or its stand-down failed) is stopped with its container.
	stage := time.Now()
	stoodDown := map[runtime.Ref]bool{}
	sb, _ := c.rt.(runtime.StandBy)
	for _, g := range stopGroups {
		stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		if sb != nil {
			g = c.standDownAll(stopCtx, sb, g, stoodDown)
		}
		err = c.stopAll(stopCtx, g)
		cancel()
		if err != nil {
			return nil, i18n.Wrap(err, "snapshot.err.stop")
		}
	}
	res.stage("stop", &stage)

	token := fmt.Sprintf("klab-%s-%d", c.spec.Name, time.Now().UnixNano())
	peers := make([]etcd.Peer, len(c.members))
	for i, m := range c.members {
		peers[i] = etcd.Peer{Name: m.Name, PeerURL: m.PeerURL, ClientURL: m.ClientURL}
	}
	// Every data dir is restored before any member starts.
	errs := make([]error, len(c.members))
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.rt.RestoreEtcd(ctx, m.Ref(), etcd.RestoreConfig{Snapshot: path, Name: m.Name, ClusterToken: token, InitialCluster: peers})
			if err != nil {
				errs[i] = err
				return
			}
			if i == 0 {
				res.ClusterID = fmt.Sprintf("%x", r.ClusterID)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, i18n.Wrap(snapshotError(err), "snapshot.err.restore")
	}
	res.stage("restore", &stage)
	c.members = membersOf(nodesOf(info.Nodes, c.members), token, info.EtcdCredentials)
	ni := *info
	ni.ClusterToken, ni.Members = token, c.members
	if err := writeInfo(c.dir, &ni); err != nil {
		return nil, err
	}
	c.info.Store(&ni)

	// etcd first, together; then the API servers; then the load balancer,
	// as klab up starts it, once they serve (started with them, its first
	// health check finds none listening and takes every backend out of the
	// rotation until the next check a second later, while the components
	// started next are refused and back off); then everything else.
	var groups [4][]runtime.Ref
	for _, ref := range running {
		switch ref.Component {
		case runtime.ComponentEtcd:
			groups[0] = append(groups[0], ref)
		case runtime.ComponentAPIServer:
			groups[1] = append(groups[1], ref)
		case runtime.ComponentLB:
			groups[2] = append(groups[2], ref)
		default:
			groups[3] = append(groups[3], ref)
		}
	}
	for i, g := range groups {
		if err := c.startAll(ctx, g, stoodDown); err != nil {
			return nil, i18n.Wrap(err, "snapshot.err.start")
		}
		switch i {
		case 0:
			if err := waitLeader(ctx, c.members, DefaultLeaderTimeout); err != nil {
				return nil, err
			}
			res.stage("etcd", &stage)
		case 2:
			res.stage("apiservers", &stage)
		case 3:
			res.stage("others", &stage)
		}
	}
	answers := fetchAll(ctx, c.members)
	if i, ok := leaderOf(answers); ok {
		res.Leader = c.members[i].Name
		res.Term = answers[i].status.Term
		res.ClusterID = answers[i].status.ClusterID
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// standDownAll stands down, at once, every running component of infos
// (runtime.StandBy) and marks it in stoodDown; it returns the components
// left to stop the usual way: those not running, and those whose stand-down
// failed.
func (c *Cluster) standDownAll(ctx context.Context, sb runtime.StandBy, infos []runtime.ComponentInfo, stoodDown map[runtime.Ref]bool) []runtime.ComponentInfo {
	ok := make([]bool, len(infos))
	var wg sync.WaitGroup
	for i, ci := range infos {
		if ci.State != runtime.StateRunning {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := sb.StandDown(ctx, ci.Ref); err != nil {
				c.logger.Warn("could not restart a component in place; stopping it", "component", ci.Ref, "err", err)
				return
			}
			ok[i] = true
		}()
	}
	wg.Wait()
	var rest []runtime.ComponentInfo
	for i, ci := range infos {
		if ok[i] {
			stoodDown[ci.Ref] = true
		} else {
			rest = append(rest, ci)
		}
	}
	return rest
}

// stage records the stage that ends now, begun at *since, and starts the
// next.
func (r *RestoreResult) stage(name string, since *time.Time) {
	now := time.Now()
	r.Stages = append(r.Stages, RestoreStage{Name: name, Elapsed: now.Sub(*since)})
	*since = now
}

// nodesOf returns the nodes the members run on, in the members' order.
func nodesOf(nodes []runtime.Node, members []MemberInfo) []runtime.Node {
	out := make([]runtime.Node, 0, len(members))
	for _, m := range members {
		for _, n := range nodes {
			if n.Name == m.Name {
				out = append(out, n)
			}
		}
	}
	return out
}
