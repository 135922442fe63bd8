package lessons

import (
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// maxMinutes bounds a lesson's estimated time: a lesson longer than a
// class is two lessons.
const maxMinutes = 240

// frame decodes the lesson's frame from its root mapping's fields; every
// part is optional, but each given must be whole (both languages).
func (d *decoder) frame(f *fields) Frame {
	var fr Frame
	if n := f.get("objectives"); n != nil && !isNull(n) {
		for i, o := range d.sequence(n, "objectives") {
			fr.Objectives = append(fr.Objectives, d.bilingual(o, index("objectives", i)))
		}
	}
	if n := f.get("prerequisites"); n != nil && !isNull(n) {
		for i, item := range d.sequence(n, "prerequisites") {
			p := index("prerequisites", i)
			s, ok := d.scalar(item, p)
			if !ok {
				continue
			}
			if !validID(s) {
				d.fail(item, p, i18n.M("lessons.err.bad-id", s))
				continue
			}
			fr.Prerequisites = append(fr.Prerequisites, s)
			fr.prereqAt = append(fr.prereqAt, [2]int{item.Line, item.Column})
		}
	}
	fr.Minutes = f.integer("minutes", false, 0, 1, maxMinutes)
	if v, vn := f.str("level", false); vn != nil {
		if !contains(levelNames(), v) {
			d.fail(vn, "level", i18n.M("lessons.err.unknown-level", v, strings.Join(levelNames(), ", ")))
		} else {
			fr.Level = Level(v)
		}
	}
	fr.Recap = f.optionalBilingual("recap")
	if n := f.get("readNext"); n != nil && !isNull(n) {
		for i, item := range d.sequence(n, "readNext") {
			if l, ok := d.link(item, index("readNext", i)); ok {
				fr.ReadNext = append(fr.ReadNext, l)
			}
		}
	}
	return fr
}

func levelNames() []string {
	out := make([]string, len(Levels))
	for i, l := range Levels {
		out[i] = string(l)
	}
	return out
}

// link decodes a page to read: {title: {ko, en}, url: https://...}.
func (d *decoder) link(n *yaml.Node, path string) (Link, bool) {
	f := d.mapping(n, path, "title", "url")
	if f == nil {
		return Link{}, false
	}
	l := Link{Title: f.bilingual("title")}
	s, un := f.str("url", true)
	if un == nil || s == "" {
		return l, false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		d.fail(un, field(path, "url"), i18n.M("lessons.err.bad-url", s))
		return l, false
	}
	l.URL = s
	return l, true
}

// maxChoices bounds a prediction's choices: more do not fit the pane.
const maxChoices = 6

// prediction decodes a question asked before the act.
func (d *decoder) prediction(n *yaml.Node, path string) *Prediction {
	f := d.mapping(n, path, "question", "choices")
	if f == nil {
		return nil
	}
	p := &Prediction{Question: f.bilingual("question")}
	cn := f.require("choices")
	if cn == nil {
		return p
	}
	cp := field(path, "choices")
	items := d.sequence(cn, cp)
	if cn.Kind != yaml.SequenceNode {
		return p
	}
	if len(items) < 2 || len(items) > maxChoices {
		d.fail(cn, cp, i18n.M("lessons.err.choices-count", 2, maxChoices, len(items)))
	}
	right := 0
	for i, item := range items {
		ip := index(cp, i)
		cf := d.mapping(item, ip, "text", "right", "why")
		if cf == nil {
			continue
		}
		c := Choice{Text: cf.bilingual("text"), Why: cf.bilingual("why")}
		c.Right, _ = cf.boolean("right")
		if c.Right {
			right++
		}
		p.Choices = append(p.Choices, c)
	}
	if right == 0 {
		d.fail(cn, cp, i18n.M("lessons.err.no-right-choice"))
	}
	return p
}

// optionalBilingual reads key as a text in both languages when it is
// there; absent, it is empty.
func (f *fields) optionalBilingual(key string) Bilingual {
	n := f.get(key)
	if n == nil {
		return Bilingual{}
	}
	return f.d.bilingual(n, field(f.path, key))
}

// Right reports whether choice i is a right answer.
func (p *Prediction) Right(i int) bool { return i >= 0 && i < len(p.Choices) && p.Choices[i].Right }

// About returns, in the current language, one line on the lesson's size:
// its estimated time, its level and the lessons to take first, those
// given; empty when the frame gives none of them. name gives a lesson's
// name from its id; nil names lessons by id.
func (f Frame) About(name func(id string) string) string {
	var parts []string
	if f.Minutes > 0 {
		parts = append(parts, i18n.T("lessons.frame.minutes", f.Minutes))
	}
	if f.Level != "" {
		level := "lessons.level." + string(f.Level)
		parts = append(parts, i18n.T(level))
	}
	if len(f.Prerequisites) > 0 {
		names := f.Prerequisites
		if name != nil {
			names = make([]string, len(f.Prerequisites))
			for i, id := range f.Prerequisites {
				names[i] = name(id)
			}
		}
		parts = append(parts, i18n.T("lessons.frame.prerequisites", strings.Join(names, ", ")))
	}
	return strings.Join(parts, " · ")
}
