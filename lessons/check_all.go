package lessons

import (
	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// AllCheck passes when every one of its checks passes at the same moment.
// Since the checks about commands and messages count what happened since
// the step began, "you ran this, and the cluster is now like that" holds
// once both are true.
//
//	all:
//	  - nodes-ready: {count: 6}
//	  - command-succeeded: {command: klab kubectl get nodes}
type AllCheck struct{ Checks []Check }

func (AllCheck) Kind() CheckKind { return KindAll }

func (c AllCheck) Needs() Needs {
	var n Needs
	for _, sub := range c.Checks {
		n = n.merge(sub.Needs())
	}
	return n
}

func (c AllCheck) Describe() []i18n.Message {
	var out []i18n.Message
	for _, sub := range c.Checks {
		out = append(out, sub.Describe()...)
	}
	return out
}

// evaluate gives, when not every check passes, the reasons of those still
// waiting, so that the student reads what is missing.
func (c AllCheck) evaluate(start, now *world) Verdict {
	var passed, waiting []i18n.Message
	for _, sub := range c.Checks {
		v := sub.evaluate(start, now)
		if v.Passed {
			passed = append(passed, v.Reasons...)
		} else {
			waiting = append(waiting, v.Reasons...)
		}
	}
	if len(waiting) > 0 {
		return wait(waiting...)
	}
	return pass(passed...)
}

func (d *decoder) all(n *yaml.Node, path string) Check {
	if n == nil || isNull(n) {
		d.fail(n, path, i18n.M("lessons.err.all-empty"))
		return nil
	}
	items := d.sequence(n, path)
	if items == nil {
		return nil
	}
	if len(items) < 2 {
		d.fail(n, path, i18n.M("lessons.err.all-empty"))
	}
	c := AllCheck{}
	for i, item := range items {
		if sub := d.check(item, index(path, i)); sub != nil {
			c.Checks = append(c.Checks, sub)
		}
	}
	return c
}
