package lessons

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// EventCheck passes when at least Count Kubernetes Events matching it were
// recorded since the step began: with its reason and type, about an object
// of its kind whose name starts with Name, in its namespace, with a message
// that contains Message. An empty field matches anything.
//
//	event: {reason: Scheduled, kind: Pod, name: web-}
//	event: {type: Warning, reason: FailedScheduling, message: untolerated taint}
type EventCheck struct {
	Reason, Type string
	// ObjectKind and Name are the involved object's; Name is a prefix
	// (web- matches the pods of Deployment web).
	ObjectKind, Name string
	// Namespace is "" for any.
	Namespace string
	Message   string
	Count     int
}

func (EventCheck) Kind() CheckKind { return KindEvent }
func (EventCheck) Needs() Needs    { return Needs{Events: true} }

// summary writes what the check looks for, as kubectl get events shows
// its columns, which reads the same in both languages.
func (c EventCheck) summary() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("type", c.Type)
	add("reason", c.Reason)
	obj := c.ObjectKind
	if c.Name != "" {
		obj += "/" + c.Name + "*"
	}
	add("object", strings.TrimPrefix(obj, "/"))
	add("namespace", c.Namespace)
	if c.Message != "" {
		parts = append(parts, "message~"+quoteText(c.Message))
	}
	return strings.Join(parts, " ")
}

func quoteText(s string) string { return "\u201c" + s + "\u201d" }

func (c EventCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.event", c.Count, c.summary())}
}

// matches reports whether one Event is what the check looks for.
func (c EventCheck) matches(e EventObserved) bool {
	return (c.Reason == "" || e.Reason == c.Reason) &&
		(c.Type == "" || strings.EqualFold(e.Type, c.Type)) &&
		(c.ObjectKind == "" || strings.EqualFold(e.Kind, c.ObjectKind)) &&
		strings.HasPrefix(e.Name, c.Name) &&
		(c.Namespace == "" || e.Namespace == c.Namespace) &&
		strings.Contains(e.Message, c.Message)
}

func (c EventCheck) evaluate(_, now *world) Verdict {
	n := 0
	var last EventObserved
	for _, e := range now.events {
		if c.matches(e) {
			n++
			last = e
		}
	}
	msg := i18n.M("lessons.check.events", n, len(now.events))
	if n == 0 {
		return wait(msg)
	}
	seen := i18n.M("lessons.check.event-seen", last.Type, last.Reason, last.Kind+"/"+last.Name, last.Message)
	if n >= c.Count {
		return pass(msg, seen)
	}
	return wait(msg, seen)
}

// eventTypes are the types an Event has.
var eventTypes = []string{"Normal", "Warning"}

func (d *decoder) event(n *yaml.Node, path string) Check {
	f := d.params(n, path, "reason", "type", "kind", "name", "namespace", "message", "count")
	if f == nil {
		return nil
	}
	c := EventCheck{}
	c.Reason, _ = f.str("reason", false)
	if t, tn := f.str("type", false); tn != nil {
		if !contains(eventTypes, t) {
			d.fail(tn, field(path, "type"), i18n.M("lessons.err.bad-choice", t, strings.Join(eventTypes, ", ")))
		}
		c.Type = t
	}
	if k, kn := f.str("kind", false); kn != nil {
		r, ok := lookupResource(k)
		if !ok {
			d.fail(kn, field(path, "kind"), i18n.M("lessons.err.bad-kind", k, resourceNames()))
		} else {
			c.ObjectKind = r.Kind
		}
	}
	c.Name, _ = f.str("name", false)
	if ns, nn := f.str("namespace", false); nn != nil {
		if !validID(ns) {
			d.fail(nn, field(path, "namespace"), i18n.M("lessons.err.bad-id", ns))
		}
		c.Namespace = ns
	}
	c.Message, _ = f.str("message", false)
	c.Count = f.integer("count", false, 1, 1, maxObjects)
	if c.Reason == "" && c.Message == "" && f.node != nil {
		d.fail(f.node, path, i18n.M("lessons.err.need-one-of", "reason, message"))
	}
	return c
}
