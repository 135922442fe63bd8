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

func (d *decoder) all(n *yaml.Node, path string) Check { return d.list(n, path, KindAll) }

// list decodes the checks of all or any.
func (d *decoder) list(n *yaml.Node, path string, kind CheckKind) Check {
	if n == nil || isNull(n) {
		d.fail(n, path, i18n.M("lessons.err.all-empty", string(kind)))
		return nil
	}
	items := d.sequence(n, path)
	if items == nil {
		return nil
	}
	if len(items) < 2 {
		d.fail(n, path, i18n.M("lessons.err.all-empty", string(kind)))
	}
	c := AllCheck{}
	for i, item := range items {
		if sub := d.check(item, index(path, i)); sub != nil {
			c.Checks = append(c.Checks, sub)
		}
	}
	return c
}

// AnyCheck passes when one of its checks passes. It is for an act whose
// outcome varies and where each outcome teaches: a write during a
// partition commits or is refused depending on the member it reaches.
//
//	any:
//	  - write-refused: {key: /klab/quorum}
//	  - key-exists: {key: /klab/quorum, value: partitioned}
type AnyCheck struct{ Checks []Check }

func (AnyCheck) Kind() CheckKind { return KindAny }

func (c AnyCheck) Needs() Needs { return AllCheck(c).Needs() }

// Describe says that one of the conditions will do.
func (c AnyCheck) Describe() []i18n.Message {
	out := []i18n.Message{i18n.M("lessons.want.any")}
	for _, sub := range c.Checks {
		out = append(out, sub.Describe()...)
	}
	return out
}

// evaluate gives the reasons of the check that passed, or of them all.
func (c AnyCheck) evaluate(start, now *world) Verdict {
	var waiting []i18n.Message
	for _, sub := range c.Checks {
		v := sub.evaluate(start, now)
		if v.Passed {
			return v
		}
		waiting = append(waiting, v.Reasons...)
	}
	return wait(waiting...)
}

func (d *decoder) any(n *yaml.Node, path string) Check {
	all, ok := d.list(n, path, KindAny).(AllCheck)
	if !ok {
		return nil
	}
	return AnyCheck(all)
}
