package lessons

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// maxErrorsPerFile bounds the errors reported for one file: past it, a file
// is more likely not a lesson at all than a lesson with many mistakes.
const maxErrorsPerFile = 50

// decoder turns one file's YAML node tree into a Lesson, collecting every
// problem rather than stopping at the first. yaml.v3's nodes keep each
// value's line and column, which struct decoding would lose.
type decoder struct {
	file string
	errs []*LoadError
	full bool
}

// fail records a problem at node n.
func (d *decoder) fail(n *yaml.Node, path string, msg i18n.Message) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.failAt(line, col, path, msg)
}

func (d *decoder) failAt(line, col int, path string, msg i18n.Message) {
	if d.full {
		return
	}
	if len(d.errs) == maxErrorsPerFile {
		d.full = true
		msg = i18n.M("lessons.err.too-many")
		path = ""
	}
	d.errs = append(d.errs, &LoadError{File: d.file, Line: line, Column: col, Path: path, Msg: msg})
}

// failErr records err at node n: its message when it is an *i18n.Error,
// else its text.
func (d *decoder) failErr(n *yaml.Node, path string, err error) {
	if e, ok := err.(*i18n.Error); ok {
		d.fail(n, path, i18n.Message{Key: e.Key, Args: e.Args})
		return
	}
	d.fail(n, path, i18n.M("lessons.err.plain", err.Error()))
}

// field and index build the paths errors name.
func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// fields is a mapping node's entries, read strictly: unknown and repeated
// keys have been reported, and a required key that is missing is reported
// when it is asked for.
type fields struct {
	d      *decoder
	node   *yaml.Node
	path   string
	values map[string]*yaml.Node
}

// mapping reads n as a mapping whose keys are among known. It returns nil
// (having reported why) when n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, path string, known ...string) *fields {
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, i18n.M("lessons.err.want-mapping"))
		return nil
	}
	f := &fields{d: d, node: n, path: path, values: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.fail(k, path, i18n.M("lessons.err.key-not-string"))
			continue
		}
		if prev, ok := f.values[k.Value]; ok {
			d.fail(k, field(path, k.Value), i18n.M("lessons.err.duplicate-key", k.Value, keyLine(n, prev)))
			continue
		}
		if !contains(known, k.Value) {
			d.fail(k, path, i18n.M("lessons.err.unknown-key", k.Value, strings.Join(known, ", ")))
			continue
		}
		f.values[k.Value] = v
	}
	return f
}

// params reads a check's parameters: a mapping, or nothing at all (an
// empty value or {}), which is a mapping without keys.
func (d *decoder) params(n *yaml.Node, path string, known ...string) *fields {
	if n == nil || isNull(n) {
		return &fields{d: d, node: n, path: path, values: map[string]*yaml.Node{}}
	}
	return d.mapping(n, path, known...)
}

// keyLine returns the line of the key whose value is v in mapping m.
func keyLine(m, v *yaml.Node) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i+1] == v {
			return m.Content[i].Line
		}
	}
	return v.Line
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// get returns the value of key, or nil when it is absent.
func (f *fields) get(key string) *yaml.Node { return f.values[key] }

// require returns the value of key, reporting it when absent.
func (f *fields) require(key string) *yaml.Node {
	v := f.values[key]
	if v == nil {
		f.d.fail(f.node, f.path, i18n.M("lessons.err.missing-key", key))
	}
	return v
}

// str reads key as a string; required reports its absence. Any scalar but
// null reads as its text, so that `value: 3` is the string "3".
func (f *fields) str(key string, required bool) (string, *yaml.Node) {
	n := f.values[key]
	if n == nil {
		if required {
			f.require(key)
		}
		return "", nil
	}
	s, ok := f.d.scalar(n, field(f.path, key))
	if ok && required && strings.TrimSpace(s) == "" {
		f.d.fail(n, field(f.path, key), i18n.M("lessons.err.empty"))
	}
	return s, n
}

// scalar reads n as a non-null scalar's text.
func (d *decoder) scalar(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.fail(n, path, i18n.M("lessons.err.want-string"))
		return "", false
	}
	return n.Value, true
}

// integer reads key as a whole number in [min, max]; absent, it is def
// (and reported when required).
func (f *fields) integer(key string, required bool, def, min, max int) int {
	n := f.values[key]
	if n == nil {
		if required {
			f.require(key)
		}
		return def
	}
	path := field(f.path, key)
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		f.d.fail(n, path, i18n.M("lessons.err.want-int", n.Value))
		return def
	}
	if v < min || v > max {
		f.d.fail(n, path, i18n.M("lessons.err.range", min, max, v))
		return def
	}
	return v
}

// number reads key as a number in (0, max] (speeds and slowdowns: zero is
// never meaningful); absent, it is def.
func (f *fields) number(key string, def, max float64) float64 {
	n := f.values[key]
	if n == nil {
		return def
	}
	path := field(f.path, key)
	var v float64
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&v) != nil {
		f.d.fail(n, path, i18n.M("lessons.err.want-number", n.Value))
		return def
	}
	if math.IsNaN(v) || v <= 0 || v > max {
		f.d.fail(n, path, i18n.M("lessons.err.range-positive", max, n.Value))
		return def
	}
	return v
}

// boolean reads key as true or false; set reports whether it was given.
func (f *fields) boolean(key string) (v, set bool) {
	n := f.values[key]
	if n == nil {
		return false, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		f.d.fail(n, field(f.path, key), i18n.M("lessons.err.want-bool", n.Value))
		return false, false
	}
	return v, true
}

// sequence reads n as a list, reporting anything else.
func (d *decoder) sequence(n *yaml.Node, path string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, i18n.M("lessons.err.want-list"))
		return nil
	}
	return n.Content
}

// bilingual reads n as a text in both languages.
func (d *decoder) bilingual(n *yaml.Node, path string) Bilingual {
	var b Bilingual
	f := d.mapping(n, path, string(i18n.Korean), string(i18n.English))
	if f == nil {
		return b
	}
	// runtimes are each language's runtime passages; ok when both read.
	var runtimes [2][]string
	ok := true
	read := func(i int, lang i18n.Lang, missing i18n.Message) string {
		v := f.get(string(lang))
		if v == nil {
			d.fail(n, path, missing)
			ok = false
			return ""
		}
		if isNull(v) {
			d.fail(v, path, missing)
			ok = false
			return ""
		}
		p := field(path, string(lang))
		s, read := d.scalar(v, p)
		if read && strings.TrimSpace(s) == "" {
			d.fail(v, path, missing)
		}
		parts, err := splitRuntimes(s)
		if err != nil {
			d.failAt(textLine(v, err.line), 0, p, err.msg)
		}
		ok = ok && read && err == nil
		runtimes[i] = runtimesOf(parts)
		return s
	}
	b.Korean = read(0, i18n.Korean, i18n.M("lessons.err.missing-ko"))
	b.English = read(1, i18n.English, i18n.M("lessons.err.missing-en"))
	if ok && !slices.Equal(runtimes[0], runtimes[1]) {
		d.fail(n, path, i18n.M("lessons.err.runtime-mismatch", strings.Join(runtimes[0], ", "), strings.Join(runtimes[1], ", ")))
	}
	return b
}

// textLine returns the line of the file that holds line i (from 0) of
// scalar v's text: a block scalar's text starts on the line after its
// indicator; a flow scalar that spans lines is taken line for line.
func textLine(v *yaml.Node, i int) int {
	if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return v.Line + 1 + i
	}
	return v.Line + i
}

// bilingualField reads a required bilingual field of f.
func (f *fields) bilingual(key string) Bilingual {
	n := f.require(key)
	if n == nil {
		return Bilingual{}
	}
	return f.d.bilingual(n, field(f.path, key))
}

// identifier reads a required id: a lowercase DNS label, as cluster and
// Kubernetes names are, so that it can be typed on a command line.
func (f *fields) identifier(key string) string {
	s, n := f.str(key, true)
	if n != nil && s != "" && !validID(s) {
		f.d.fail(n, field(f.path, key), i18n.M("lessons.err.bad-id", s))
	}
	return s
}

// ValidID reports whether s can be a lesson's or a step's id: a
// lowercase DNS label.
func ValidID(s string) bool { return validID(s) }

func validID(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// commands reads a list of klab command lines.
func (f *fields) commands(key string, required, solution bool) []Command {
	n := f.values[key]
	if n == nil {
		if required {
			f.require(key)
		}
		return nil
	}
	path := field(f.path, key)
	if isNull(n) {
		return nil
	}
	var out []Command
	for i, item := range f.d.sequence(n, path) {
		s, ok := f.d.scalar(item, index(path, i))
		if !ok {
			continue
		}
		if err := checkCommand(s, solution); err != nil {
			f.d.failErr(item, index(path, i), err)
			continue
		}
		out = append(out, Command(strings.TrimSpace(s)))
	}
	return out
}

// noAliases reports every anchor and alias in the tree. Lesson files have
// no use for them, and refusing them keeps a hostile file from making the
// decoder walk one subtree many times over.
func (d *decoder) noAliases(n *yaml.Node) bool {
	ok := true
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			d.fail(n, "", i18n.M("lessons.err.alias"))
			ok = false
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return ok
}
