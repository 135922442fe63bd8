// Package i18n holds every string a klab user reads, in English and Korean,
// and picks the language to show them in.
//
// The catalogues are two JSON files embedded in the binary, en.json and
// ko.json, sharing one key space. A key names a message, not its English
// text ("up.ready.title", not "Cluster is ready"), so that both languages are
// written natively rather than translated word for word. Messages are
// fmt format strings; a translation may reorder its arguments with explicit
// indexes (%[2]s), and the package test fails when a key is missing in either
// language or when the two disagree on an argument's verb. A Korean particle
// after an argument is written undecided, 을(를), and takes the form that
// agrees with the argument when the message is rendered (see Particle).
//
// The current language is process-wide and may change at any moment (the TUI
// switches it on a key press), so callers render a message when they show it,
// not when they build it: Message and Error keep the key and the arguments and
// render in the language current at the time of the call.
package i18n

import (
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
)

// Lang is a language klab speaks.
type Lang string

// The languages klab speaks.
const (
	English Lang = "en"
	Korean  Lang = "ko"
)

// Langs lists every supported language, English (the fallback) first.
var Langs = []Lang{English, Korean}

//go:embed en.json ko.json
var files embed.FS

// catalogues maps a language to its messages, loaded once at init: a broken
// catalogue is a build defect that the package test catches, so loading
// failures leave the catalogue empty rather than stopping the program.
var catalogues = map[Lang]map[string]string{}

func init() {
	for _, l := range Langs {
		data, err := files.ReadFile(string(l) + ".json")
		if err != nil {
			continue
		}
		m := map[string]string{}
		if err := json.Unmarshal(data, &m); err != nil {
			continue
		}
		catalogues[l] = m
	}
	current.Store(English)
}

var current atomic.Value // Lang

// Current returns the language messages are rendered in right now.
func Current() Lang { return current.Load().(Lang) }

// SetLang switches the process-wide language. An unsupported value is
// ignored, so a bad setting never leaves the user without messages.
func SetLang(l Lang) {
	if _, ok := catalogues[l]; ok {
		current.Store(l)
	}
}

// Parse turns a language setting ("ko", "ko_KR.UTF-8", "en-US", "C") into a
// supported language; ok is false when the setting names none.
func Parse(s string) (l Lang, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch {
	case s == "":
		return "", false
	case strings.HasPrefix(s, "ko"):
		return Korean, true
	case strings.HasPrefix(s, "en"), s == "c", s == "posix", strings.HasPrefix(s, "c."):
		return English, true
	}
	return "", false
}

// Detect picks the language from the environment: KLAB_LANG first, then the
// POSIX locale variables in their order of precedence (LC_ALL, LC_MESSAGES,
// LANG). A locale klab does not speak falls back to English.
func Detect() Lang {
	if l, ok := Parse(os.Getenv("KLAB_LANG")); ok {
		return l
	}
	for _, name := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		// The first variable that is set decides, as in setlocale(3), even
		// when it names a language klab does not speak.
		if v := os.Getenv(name); v != "" {
			if l, ok := Parse(v); ok {
				return l
			}
			return English
		}
	}
	return English
}

// T renders the message key in the current language.
func T(key string, args ...any) string { return Current().T(key, args...) }

// T renders the message key in language l. A key missing in l falls back to
// English, and a key missing everywhere renders as the key itself so that the
// gap is visible rather than silent.
func (l Lang) T(key string, args ...any) string {
	msg, ok := catalogues[l][key]
	if !ok {
		msg, ok = catalogues[English][key]
	}
	if !ok {
		if len(args) == 0 {
			return key
		}
		return key + fmt.Sprint(args...)
	}
	return format(msg, args)
}

// N returns the text of key for a count n, in the current language (Lang.N).
func N(key string, n int, args ...any) string { return Current().N(key, n, args...) }

// N returns the text of key for a count n: the text of key + ".one" when
// n is 1 and the catalogue has it (English says "1 master", "2 masters";
// Korean needs no such form). args are the message's arguments, n among
// them where the text shows it.
func (l Lang) N(key string, n int, args ...any) string {
	if n == 1 && l.Has(key+".one") {
		return l.T(key+".one", args...)
	}
	return l.T(key, args...)
}

// Has reports whether key exists in language l's catalogue.
func (l Lang) Has(key string) bool {
	_, ok := catalogues[l][key]
	return ok
}

// Keys returns every key of language l's catalogue, sorted.
func Keys(l Lang) []string {
	keys := make([]string, 0, len(catalogues[l]))
	for k := range catalogues[l] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Message is a message not yet rendered: a key and its arguments.
type Message struct {
	Key  string `json:"key"`
	Args []any  `json:"args,omitempty"`
}

// M builds a Message.
func M(key string, args ...any) Message { return Message{Key: key, Args: args} }

// String renders the message in the current language.
func (m Message) String() string { return Current().T(m.Key, m.Args...) }

// In renders the message in language l.
func (m Message) In(l Lang) string { return l.T(m.Key, m.Args...) }
