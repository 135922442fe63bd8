// Package prefs remembers the TUI's settings between runs, in ui.json
// under klab's state dir.
package prefs

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/cluster/lab"
)

// File is the preferences file's name under klab's state dir.
const File = "ui.json"

// Prefs are the remembered settings.
type Prefs struct {
	// Lang is the language last chosen in the TUI.
	Lang i18n.Lang `json:"lang,omitempty"`
}

func path() (string, error) {
	home, err := lab.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, File), nil
}

// Load reads the preferences; a missing or unreadable file gives the
// defaults, since nothing in it is worth refusing to start over.
func Load() Prefs {
	var p Prefs
	name, err := path()
	if err != nil {
		return p
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return p
	}
	if json.Unmarshal(data, &p) != nil {
		return Prefs{}
	}
	if _, ok := i18n.Parse(string(p.Lang)); !ok {
		p.Lang = ""
	}
	return p
}

// Save writes the preferences.
func Save(p Prefs) error {
	name, err := path()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return i18n.Wrap(err, "ui.err.prefs", name)
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return i18n.Wrap(err, "ui.err.prefs", name)
	}
	if err := os.WriteFile(name, append(data, '\n'), 0o600); err != nil {
		return i18n.Wrap(err, "ui.err.prefs", name)
	}
	return nil
}

// Language picks the language to start in: KLAB_LANG when it names one
// (an explicit request for this run), else the one last chosen in the TUI,
// else the locale's.
func Language(p Prefs) i18n.Lang {
	if l, ok := i18n.Parse(os.Getenv("KLAB_LANG")); ok {
		return l
	}
	if l, ok := i18n.Parse(string(p.Lang)); ok {
		return l
	}
	return i18n.Detect()
}
