package lessons

import (
	"bytes"
	"embed"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

//go:embed content/*.yaml
var content embed.FS

// embeddedDir is where the embedded lessons live in klab's source tree;
// errors in them name that path, so that a failing test points at the file.
const embeddedDir = "lessons/content"

// Embedded loads the lessons built into klab.
func Embedded() ([]*Lesson, error) {
	sub, err := fs.Sub(content, "content")
	if err != nil {
		return nil, err
	}
	return load(sub, func(p string) string { return path.Join(embeddedDir, p) })
}

// Load loads every lesson file (*.yaml, *.yml) in fsys, in any folder, and
// returns the lessons sorted by Order, then ID. Errors name files by their
// path in fsys. All problems are reported, joined into one error whose
// parts are *LoadError (see LoadErrors); the lessons returned alongside are
// those whose files have no problem.
func Load(fsys fs.FS) ([]*Lesson, error) {
	return load(fsys, func(p string) string { return p })
}

// LoadDir loads the lesson files under dir, as Load does; errors name files
// by dir joined with their path inside it.
func LoadDir(dir string) ([]*Lesson, error) {
	return load(os.DirFS(dir), func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) })
}

// lessonRef says where a lesson id was first seen.
type lessonRef struct {
	file  string
	line  int
	title Bilingual
}

func load(fsys fs.FS, name func(string) string) ([]*Lesson, error) {
	var (
		files []string
		errs  []error
	)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, &LoadError{File: name(p), Msg: i18n.M("lessons.err.read", err.Error())})
			return nil
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, &LoadError{File: name("."), Msg: i18n.M("lessons.err.read", err.Error())})
	}
	if len(files) == 0 && len(errs) == 0 {
		errs = append(errs, &LoadError{File: name("."), Msg: i18n.M("lessons.err.no-lessons")})
	}
	sort.Strings(files)

	var lessons []*Lesson
	seen := map[string]lessonRef{}
	for _, p := range files {
		file := name(p)
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			errs = append(errs, &LoadError{File: file, Msg: i18n.M("lessons.err.read", err.Error())})
			continue
		}
		l, idNode, problems := decodeFile(file, data)
		if l != nil && idNode != nil && l.ID != "" {
			if first, dup := seen[l.ID]; dup {
				problems = append(problems, &LoadError{File: file, Line: idNode.Line, Column: idNode.Column, Path: "id",
					Msg: i18n.M("lessons.err.duplicate-lesson", l.ID, first.file+":"+strconv.Itoa(first.line))})
			} else {
				seen[l.ID] = lessonRef{file: file, line: idNode.Line, title: l.Title}
			}
		}
		for _, e := range problems {
			errs = append(errs, e)
		}
		if len(problems) == 0 {
			lessons = append(lessons, l)
		}
	}
	// A prerequisite names a lesson loaded alongside: known only now.
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	kept := lessons[:0]
	for _, l := range lessons {
		bad := false
		l.Frame.PrerequisiteTitles = nil
		for i, p := range l.Frame.Prerequisites {
			if ref, ok := seen[p]; ok && p != l.ID {
				l.Frame.PrerequisiteTitles = append(l.Frame.PrerequisiteTitles, ref.title)
				continue
			}
			bad = true
			errs = append(errs, &LoadError{File: l.File, Line: l.Frame.prereqAt[i][0], Column: l.Frame.prereqAt[i][1], Path: index("prerequisites", i),
				Msg: i18n.M("lessons.err.unknown-prerequisite", p, strings.Join(ids, ", "))})
		}
		if !bad {
			kept = append(kept, l)
		}
	}
	lessons = kept
	sort.SliceStable(lessons, func(i, j int) bool {
		if lessons[i].Order != lessons[j].Order {
			return lessons[i].Order < lessons[j].Order
		}
		return lessons[i].ID < lessons[j].ID
	})
	return lessons, errors.Join(errs...)
}

// yamlLine matches the line yaml.v3 puts in a syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblems are the problems yaml.v3's parser (as opposed to its
// scanner) reports. For these it prints the line counted from 0, as the
// scanner's lines are counted before it adds one; the loader adds it.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// decodeFile decodes one lesson file. It returns the lesson (possibly
// incomplete when there are problems), the node of its id, and the
// problems.
func decodeFile(file string, data []byte) (*Lesson, *yaml.Node, []*LoadError) {
	d := &decoder{file: file}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.failAt(0, 0, "", i18n.M("lessons.err.empty-file"))
		} else {
			d.syntax(err)
		}
		return nil, nil, d.errs
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.syntax(err)
		return nil, nil, d.errs
	default:
		d.failAt(extra.Line, extra.Column, "", i18n.M("lessons.err.multiple-docs"))
		return nil, nil, d.errs
	}
	if len(doc.Content) == 0 || isNull(doc.Content[0]) {
		d.failAt(0, 0, "", i18n.M("lessons.err.empty-file"))
		return nil, nil, d.errs
	}
	root := doc.Content[0]
	if !d.noAliases(root) {
		return nil, nil, d.errs
	}
	l, idNode := d.lesson(root)
	l.File = file
	return l, idNode, d.errs
}

// syntax records a YAML syntax error at the line the parser names.
func (d *decoder) syntax(err error) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if contains(parserProblems, msg) {
		// Without a line, the parser's line was 0: the first.
		line++
	}
	key := "lessons.err.syntax"
	switch {
	case strings.Contains(msg, "mapping values are not allowed in this context"):
		// A plain text with ": " in it, in {…} or on a line of its own.
		key = "lessons.err.syntax-colon"
	case flowProblem(msg):
		key = "lessons.err.syntax-flow"
	}
	d.failAt(line, 0, "", i18n.M(key, msg))
}

// flowProblem reports whether the parser's message is what an unquoted
// comma, colon or question mark inside {…} or […] leads to: the value
// ends early and the rest does not parse.
func flowProblem(msg string) bool {
	return strings.Contains(msg, "did not find expected ',' or '}'") ||
		strings.Contains(msg, "did not find expected ',' or ']'")
}

// lesson decodes a lesson's root mapping.
func (d *decoder) lesson(root *yaml.Node) (*Lesson, *yaml.Node) {
	l := &Lesson{}
	f := d.mapping(root, "", "id", "order", "title", "summary", "cluster", "steps",
		"objectives", "prerequisites", "minutes", "level", "recap", "readNext")
	if f == nil {
		return l, nil
	}
	l.ID = f.identifier("id")
	l.Order = f.integer("order", true, 0, 0, 100000)
	l.Title = f.bilingual("title")
	l.Summary = f.bilingual("summary")
	l.Frame = d.frame(f)
	if n := f.require("cluster"); n != nil {
		if s := d.shape(n, "cluster"); s != nil {
			l.Cluster = *s
		}
	}
	if n := f.require("steps"); n != nil {
		items := d.sequence(n, "steps")
		if n.Kind == yaml.SequenceNode && len(items) == 0 {
			d.fail(n, "steps", i18n.M("lessons.err.no-steps"))
		}
		ids := map[string]int{}
		for i, item := range items {
			p := index("steps", i)
			s := d.step(item, p)
			if s == nil {
				continue
			}
			if s.ID != "" {
				if first, dup := ids[s.ID]; dup {
					d.fail(item, field(p, "id"), i18n.M("lessons.err.duplicate-step", s.ID, index("steps", first)))
				} else {
					ids[s.ID] = i
				}
			}
			l.Steps = append(l.Steps, s)
		}
	}
	return l, f.get("id")
}

// step decodes one step.
func (d *decoder) step(n *yaml.Node, path string) *Step {
	f := d.mapping(n, path, "id", "title", "body", "view", "try", "hints", "check", "solution", "cluster",
		"notes", "predict", "observe")
	if f == nil {
		return nil
	}
	s := &Step{Line: n.Line, View: ViewOverview}
	s.ID = f.identifier("id")
	s.Title = f.bilingual("title")
	s.Body = f.bilingual("body")
	if v, vn := f.str("view", false); vn != nil {
		if !contains(viewNames(), v) {
			d.fail(vn, field(path, "view"), i18n.M("lessons.err.unknown-view", v, strings.Join(viewNames(), ", ")))
		} else {
			s.View = View(v)
		}
	}
	s.Try = f.commands("try", false, false)
	if hn := f.get("hints"); hn != nil && !isNull(hn) {
		hp := field(path, "hints")
		for i, h := range d.sequence(hn, hp) {
			s.Hints = append(s.Hints, d.bilingual(h, index(hp, i)))
		}
	}
	if cn := f.require("check"); cn != nil {
		s.Check = d.check(cn, field(path, "check"))
	}
	s.Solution = f.commands("solution", true, true)
	if cn := f.get("cluster"); cn != nil {
		s.Cluster = d.shape(cn, field(path, "cluster"))
	}
	s.Notes = f.optionalBilingual("notes")
	s.Observe, _ = f.boolean("observe")
	if pn := f.get("predict"); pn != nil {
		s.Predict = d.prediction(pn, field(path, "predict"))
	}
	return s
}

func viewNames() []string {
	names := make([]string, len(Views))
	for i, v := range Views {
		names[i] = string(v)
	}
	return names
}

// shape decodes a cluster shape.
func (d *decoder) shape(n *yaml.Node, path string) *Shape {
	f := d.mapping(n, path, "masters", "workers", "speed")
	if f == nil {
		return nil
	}
	return &Shape{
		Masters: f.integer("masters", true, 1, 1, maxMasters),
		Workers: f.integer("workers", true, 0, 0, maxWorkers),
		Speed:   f.number("speed", 1, maxSpeed),
	}
}
