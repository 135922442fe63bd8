package lessons

import (
	"fmt"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/assets/i18n"
)

// LeaseHolderChangedCheck passes when a Lease has a holder other than the
// one it had when the step began, or changed hands since (its
// leaseTransitions went up, which also counts a holder that lost the lease
// and took it back). A Lease not seen when the step began passes once it
// has a holder. The schedulers and controller managers elect their leader
// this way, through kube-system/kube-scheduler and
// kube-system/kube-controller-manager.
//
//	lease-holder-changed: {name: kube-scheduler}
type LeaseHolderChangedCheck struct {
	// Namespace is kube-system unless the lesson says otherwise.
	Namespace, Name string
}

func (LeaseHolderChangedCheck) Kind() CheckKind { return KindLeaseHolder }

func (LeaseHolderChangedCheck) Needs() Needs {
	return Needs{Objects: []schema.GroupVersionResource{leasesResource}}
}

func (c LeaseHolderChangedCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.lease-holder", c.Namespace+"/"+c.Name)}
}

// lease returns a Lease's holder and transitions, and whether it was seen.
func (c LeaseHolderChangedCheck) lease(w *world) (holder string, transitions string, seen bool) {
	o, ok := w.objects[leasesResource.GroupResource()][c.Namespace+"/"+c.Name]
	if !ok {
		return "", "", false
	}
	t, _ := nested(o.Object, "spec", "leaseTransitions")
	if t != nil {
		transitions = fmt.Sprint(t)
	}
	return nestedString(o.Object, "spec", "holderIdentity"), transitions, true
}

func (c LeaseHolderChangedCheck) evaluate(start, now *world) Verdict {
	id := c.Namespace + "/" + c.Name
	holder, transitions, seen := c.lease(now)
	if !seen {
		return wait(i18n.M("lessons.check.lease-unseen", id))
	}
	was, wasTransitions, wasSeen := c.lease(start)
	shownWas := was
	if shownWas == "" {
		shownWas = "-"
	}
	shown := holder
	if shown == "" {
		shown = "-"
	}
	msg := i18n.M("lessons.check.lease-holder", id, shown, shownWas)
	changed := holder != "" && (!wasSeen || holder != was || transitions != wasTransitions)
	if changed {
		return pass(msg)
	}
	return wait(msg)
}

func (d *decoder) leaseHolder(n *yaml.Node, path string) Check {
	f := d.params(n, path, "namespace", "name")
	if f == nil {
		return nil
	}
	c := LeaseHolderChangedCheck{Namespace: "kube-system"}
	if ns, nn := f.str("namespace", false); nn != nil {
		if !validID(ns) {
			d.fail(nn, field(path, "namespace"), i18n.M("lessons.err.bad-id", ns))
		}
		c.Namespace = ns
	}
	if name, nn := f.str("name", true); nn != nil && name != "" {
		if !validName(name) {
			d.fail(nn, field(path, "name"), i18n.M("lessons.err.bad-name", name))
		}
		c.Name = name
	}
	return c
}
