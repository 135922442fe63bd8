package pki

import (
	"os"

	"github.com/klab-dev/klab/internal/atomicfile"
)

// writeIfChanged writes data to path unless the file already holds exactly
// data, so that calling Ensure again leaves files (and their times) alone.
func writeIfChanged(path string, data []byte, perm os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	return atomicfile.Write(path, data, perm)
}
