package lab

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klab-dev/klab/cluster/proxy/traffic"
)

// trafficFile is where a cluster's state dir keeps its last traffic run,
// so that whoever follows the cluster (a lesson's check) sees a run made
// from any terminal.
const trafficFile = "traffic-last.json"

// TrafficFile returns the path of the named cluster's last traffic run.
func TrafficFile(name string) (string, error) {
	dir, err := StateDir(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, trafficFile), nil
}

// recordTraffic keeps r as the named cluster's last traffic run. It
// writes a new file and renames it over the old one, so that a reader
// never sees half a report.
func recordTraffic(name string, r *traffic.Report) error {
	path, err := TrafficFile(name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeAtomic(path, data)
}

// LastTraffic reads the named cluster's last traffic run; nil, without an
// error, if there has been none.
func LastTraffic(name string) (*traffic.Report, error) {
	path, err := TrafficFile(name)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r traffic.Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
