package lessons

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzLoad feeds the loader arbitrary files: it must never panic, every
// problem must be a LoadError naming the file, and a file it accepts must
// be a complete lesson.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(framed))
	f.Add([]byte("id: x\nprerequisites: [x]\nsteps: [{predict: {choices: [{right: true}]}}]\n"))
	f.Add([]byte("id: x\nsteps: [{check: {all: [{all: [no-leader]}]}}]\n"))
	// The typed checks, with their parameters good and bad.
	for _, check := range []string{
		"{object: {kind: pods, labels: app=web, where: ['{.status.phase} == Running', '{.spec.nodeName} exists'], min: 2, distinctNodes: 2, noneOnMasters: true}}",
		"{object: {kind: deploy, name: web, where: '{.status.readyReplicas} >= 3', count: 1}}",
		"{object: {kind: nodes, namespace: x, where: ['{.a[?(@.b==\"}\")]} != c']}}",
		"{event: {reason: Scheduled, type: Normal, kind: Pod, name: web-, message: m, count: 2}}",
		"{api-request: {verb: list, resource: pods, subresource: status, namespace: kube-system, code: 2xx, user: u}}",
		"{lease-holder-changed: {namespace: kube-system, name: kube-scheduler}}",
		"{node-condition: {node: worker-1, type: Ready, status: 'False', absent: true}}",
		"{node-taint: {key: k, effect: NoSchedule}}",
		"{proxy-mode: {mode: ipvs}}",
		"{traffic: {minPods: 2, maxFailed: 0}}",
		"{etcd-request: {method: Range, prefix: /registry/, code: OK, from: outside, count: 2}}",
		"{etcd-request: {key: /a, prefix: /b}}",
	} {
		f.Add([]byte(strings.Replace(sample, "check: leader-changed", "check: "+check, 1)))
	}
	f.Add([]byte(strings.Replace(sample, "ko: 본문\n      en: Body", "ko: |\n        ::: docker\n        a\n        :::\n      en: |\n        ::: local\n        b", 1)))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("{{{{{{{{"))
	_ = fs.WalkDir(content, "content", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := content.ReadFile(p)
			f.Add(data)
		}
		return nil
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		lessons, err := Load(fstest.MapFS{"f.yaml": {Data: data}})
		errs := LoadErrors(err)
		if err != nil && len(errs) == 0 {
			t.Fatalf("error without a LoadError: %v", err)
		}
		for _, e := range errs {
			if e.File != "f.yaml" || e.Line < 0 || e.Column < 0 || e.Msg.Key == "" {
				t.Fatalf("bad LoadError %+v", e)
			}
		}
		if len(errs) > maxErrorsPerFile+1 {
			t.Fatalf("%d errors for one file", len(errs))
		}
		if err != nil {
			if len(lessons) != 0 {
				t.Fatal("a lesson with problems was returned")
			}
			return
		}
		if len(lessons) != 1 {
			t.Fatalf("%d lessons from one file", len(lessons))
		}
		l := lessons[0]
		if l.ID == "" || l.Title.Korean == "" || l.Title.English == "" || len(l.Steps) == 0 || l.Cluster.Masters < 1 {
			t.Fatalf("incomplete lesson accepted: %+v", l)
		}
		whole := func(b Bilingual) bool { return b.Korean != "" && b.English != "" }
		fr := l.Frame
		for _, o := range fr.Objectives {
			if !whole(o) {
				t.Fatalf("half-translated objective accepted: %+v", o)
			}
		}
		for _, r := range fr.ReadNext {
			if !whole(r.Title) || r.URL == "" {
				t.Fatalf("incomplete link accepted: %+v", r)
			}
		}
		if len(fr.Prerequisites) != 0 {
			t.Fatalf("prerequisite %v accepted though no other lesson was loaded", fr.Prerequisites)
		}
		if (fr.Recap.Korean == "") != (fr.Recap.English == "") || fr.Minutes < 0 || fr.Minutes > maxMinutes {
			t.Fatalf("bad frame accepted: %+v", fr)
		}
		for _, s := range l.Steps {
			if s.ID == "" || s.Check == nil || s.Body.Korean == "" || s.Body.English == "" {
				t.Fatalf("incomplete step accepted: %+v", s)
			}
			if (s.Notes.Korean == "") != (s.Notes.English == "") {
				t.Fatalf("half-translated notes accepted: %+v", s.Notes)
			}
			if p := s.Predict; p != nil {
				right := 0
				for _, c := range p.Choices {
					if !whole(c.Text) || !whole(c.Why) {
						t.Fatalf("incomplete choice accepted: %+v", c)
					}
					if c.Right {
						right++
					}
				}
				if !whole(p.Question) || len(p.Choices) < 2 || len(p.Choices) > maxChoices || right == 0 {
					t.Fatalf("bad question accepted: %+v", p)
				}
			}
		}
	})
}
