package main

import (
	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
)

// The shapes klab lessons list -o json and klab lessons show -o json
// print, for instructors' scripts. Texts come in both languages, whatever
// the language klab speaks, so that a script need not run klab twice.

// textJSON is a text in both languages.
type textJSON struct {
	Ko string `json:"ko"`
	En string `json:"en"`
}

func bi(b lessons.Bilingual) textJSON { return textJSON{Ko: b.Korean, En: b.English} }

// optBi is bi for a text that may be absent.
func optBi(b lessons.Bilingual) *textJSON {
	if b == (lessons.Bilingual{}) {
		return nil
	}
	t := bi(b)
	return &t
}

func msgJSON(m i18n.Message) textJSON {
	return textJSON{Ko: m.In(i18n.Korean), En: m.In(i18n.English)}
}

type shapeJSON struct {
	Masters int     `json:"masters"`
	Workers int     `json:"workers"`
	Speed   float64 `json:"speed"`
}

type linkJSON struct {
	Title textJSON `json:"title"`
	URL   string   `json:"url"`
}

type frameJSON struct {
	Objectives    []textJSON `json:"objectives"`
	Prerequisites []string   `json:"prerequisites"`
	Minutes       int        `json:"minutes,omitempty"`
	Level         string     `json:"level,omitempty"`
	Recap         *textJSON  `json:"recap,omitempty"`
	ReadNext      []linkJSON `json:"readNext"`
}

type progressJSON struct {
	Done    int      `json:"done"`
	Total   int      `json:"total"`
	Steps   []string `json:"steps"`
	Current string   `json:"current,omitempty"`
	// Answers are the choices (from 0) predicted, by step id.
	Answers map[string]int `json:"answers"`
}

// lessonSummaryJSON is one lesson of klab lessons list -o json.
type lessonSummaryJSON struct {
	ID      string   `json:"id"`
	Order   int      `json:"order"`
	Title   textJSON `json:"title"`
	Summary textJSON `json:"summary"`
	frameJSON
	Cluster  shapeJSON    `json:"cluster"`
	Steps    int          `json:"steps"`
	Progress progressJSON `json:"progress"`
}

type checkJSON struct {
	Kind     string     `json:"kind"`
	Describe []textJSON `json:"describe"`
}

type choiceJSON struct {
	Text  textJSON `json:"text"`
	Right bool     `json:"right"`
	Why   textJSON `json:"why"`
}

type predictJSON struct {
	Question textJSON     `json:"question"`
	Choices  []choiceJSON `json:"choices"`
}

type stepJSON struct {
	ID       string       `json:"id"`
	Line     int          `json:"line"`
	Title    textJSON     `json:"title"`
	Body     textJSON     `json:"body"`
	View     string       `json:"view"`
	Try      []string     `json:"try"`
	Hints    []textJSON   `json:"hints"`
	Notes    *textJSON    `json:"notes,omitempty"`
	Predict  *predictJSON `json:"predict,omitempty"`
	Check    *checkJSON   `json:"check,omitempty"`
	Solution []string     `json:"solution"`
	Cluster  *shapeJSON   `json:"cluster,omitempty"`
	Done     bool         `json:"done"`
}

// lessonJSON is klab lessons show -o json.
type lessonJSON struct {
	lessonSummaryJSON
	File      string     `json:"file"`
	StepsList []stepJSON `json:"steps"`
}

func shapeOf(s lessons.Shape) shapeJSON {
	speed := s.Speed
	if speed == 0 {
		speed = 1
	}
	return shapeJSON{Masters: s.Masters, Workers: s.Workers, Speed: speed}
}

func frameOf(f lessons.Frame) frameJSON {
	out := frameJSON{Objectives: []textJSON{}, Prerequisites: append([]string{}, f.Prerequisites...), ReadNext: []linkJSON{},
		Minutes: f.Minutes, Level: string(f.Level), Recap: optBi(f.Recap)}
	for _, o := range f.Objectives {
		out.Objectives = append(out.Objectives, bi(o))
	}
	for _, r := range f.ReadNext {
		out.ReadNext = append(out.ReadNext, linkJSON{Title: bi(r.Title), URL: r.URL})
	}
	return out
}

func commandStrings(cs []lessons.Command) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

func summaryOf(l *lessons.Lesson, p *lessons.Progress) lessonSummaryJSON {
	s := lessonSummaryJSON{ID: l.ID, Order: l.Order, Title: bi(l.Title), Summary: bi(l.Summary), frameJSON: frameOf(l.Frame),
		Cluster: shapeOf(l.Cluster), Steps: len(l.Steps), Progress: progressJSON{Total: len(l.Steps), Steps: []string{}, Answers: map[string]int{}}}
	if p != nil {
		s.Progress.Done, _ = p.Completed(l)
		s.Progress.Current = p.Current(l.ID)
		for _, st := range l.Steps {
			if p.Done(l.ID, st.ID) {
				s.Progress.Steps = append(s.Progress.Steps, st.ID)
			}
			if c, ok := p.Answer(l.ID, st.ID); ok {
				s.Progress.Answers[st.ID] = c
			}
		}
	}
	return s
}

func lessonOf(l *lessons.Lesson, p *lessons.Progress) lessonJSON {
	out := lessonJSON{lessonSummaryJSON: summaryOf(l, p), File: l.File, StepsList: []stepJSON{}}
	for _, s := range l.Steps {
		sj := stepJSON{ID: s.ID, Line: s.Line, Title: bi(s.Title), Body: bi(s.Body), View: string(s.View),
			Try: commandStrings(s.Try), Hints: []textJSON{}, Notes: optBi(s.Notes), Solution: commandStrings(s.Solution)}
		for _, h := range s.Hints {
			sj.Hints = append(sj.Hints, bi(h))
		}
		if s.Predict != nil {
			pj := &predictJSON{Question: bi(s.Predict.Question), Choices: []choiceJSON{}}
			for _, c := range s.Predict.Choices {
				pj.Choices = append(pj.Choices, choiceJSON{Text: bi(c.Text), Right: c.Right, Why: bi(c.Why)})
			}
			sj.Predict = pj
		}
		if s.Check != nil {
			cj := &checkJSON{Kind: string(s.Check.Kind()), Describe: []textJSON{}}
			for _, m := range s.Check.Describe() {
				cj.Describe = append(cj.Describe, msgJSON(m))
			}
			sj.Check = cj
		}
		if s.Cluster != nil {
			c := shapeOf(*s.Cluster)
			sj.Cluster = &c
		}
		if p != nil {
			sj.Done = p.Done(l.ID, s.ID)
		}
		out.StepsList = append(out.StepsList, sj)
	}
	return out
}
