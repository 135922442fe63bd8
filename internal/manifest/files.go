package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// fileExtensions are the extensions kubectl reads in a directory
// (cli-runtime's resource.FileExtensions). A file named on the command line
// is read whatever its extension.
var fileExtensions = []string{".json", ".yaml", ".yml"}

// Files expands kubectl -f arguments into the paths of the files to check,
// as kubectl's resource builder does: "-" (stdin) and http(s) URLs are
// skipped, a path that does not exist is tried as a glob pattern, a file is
// taken as it is, and a directory yields its .json, .yaml and .yml files,
// and those of its subdirectories only when recursive is set (kubectl -R).
// The errors are kubectl's. An argument that yields no file is not an
// error here; kubectl reports it.
func Files(args []string, recursive bool) ([]string, error) {
	var files []string
	for _, arg := range args {
		if arg == "-" || strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://") {
			continue
		}
		paths, err := expandPattern(arg)
		if err != nil {
			return nil, err
		}
		for _, path := range paths {
			found, err := walk(path, recursive)
			if err != nil {
				return nil, err
			}
			files = append(files, found...)
		}
	}
	return files, nil
}

// expandPattern returns arg itself if it exists, else the paths the glob
// pattern arg matches.
func expandPattern(arg string) ([]string, error) {
	if _, err := os.Stat(arg); !errors.Is(err, fs.ErrNotExist) {
		return []string{arg}, nil
	}
	matches, err := filepath.Glob(arg)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not valid: %w", arg, err)
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("the path %q does not exist", arg)
	}
	return matches, nil
}

// walk returns root if it is a file, or the manifest files in it if it is a
// directory.
func walk(root string, recursive bool) ([]string, error) {
	if _, err := os.Stat(root); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("the path %q does not exist", root)
		}
		return nil, fmt.Errorf("the path %q cannot be accessed: %w", root, err)
	}
	var files []string
	// filepath.Walk, as kubectl uses, so that a symbolic link is treated the
	// same way.
	err := filepath.Walk(root, func(path string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			if path != root && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if path != root && !slices.Contains(fileExtensions, filepath.Ext(path)) {
			return nil
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("error reading %q: %w", root, err)
	}
	return files, nil
}
