// Package atomicfile writes files so that readers never see half of one:
// klab's state (cluster.json, certificates, tokens, kubeconfigs) is either
// the old file or the whole new one, even if klab dies mid-write.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data so that a reader sees the old
// file or the whole new one, never a part: the data goes to a temporary
// file in the same directory, is synced, and is renamed over path.
// The file has perm before any data is written, so a secret is never
// readable by others, even for a moment.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// Set the mode before any secret is written into the file.
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Make the rename durable; if this fails the file is complete either
	// way, so it is not worth failing over.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
