package lessons

import (
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/assets/i18n"
)

// ObjectCheck passes when the Kubernetes objects of a kind that match its
// selection (namespace, labels, name) and its field tests are as many as
// it asks, on enough distinct nodes, and, with NoneOnMasters, none of the
// selected objects is on a master node. Objects being deleted (with a
// deletion timestamp) are left out: they are on their way out.
//
//	object:
//	  kind: pods
//	  labels: app=web
//	  where: ["{.status.phase} == Running"]
//	  min: 3
//	  distinctNodes: 2
//	  noneOnMasters: true
//
// kind is what kubectl get takes (pods, deploy, Lease, leases.coordination.k8s.io);
// count asks for exactly that many, min and max bound it (min 1 without
// either); the nodes are the objects' spec.nodeName.
type ObjectCheck struct {
	Resource schema.GroupVersionResource
	// Namespace is "" for a cluster-wide kind (nodes).
	Namespace string
	// Selector is a label selector as kubectl -l takes it; "" selects all.
	Selector string
	Name     string
	Where    []FieldTest
	// Min and Max bound how many objects match; Max < 0 is no bound.
	Min, Max      int
	DistinctNodes int
	// NoneOnMasters requires that no selected object (whatever its
	// fields) has a master node for spec.nodeName.
	NoneOnMasters bool
	selector      labels.Selector
}

func (ObjectCheck) Kind() CheckKind { return KindObject }

func (c ObjectCheck) Needs() Needs {
	return Needs{Objects: []schema.GroupVersionResource{c.Resource}}
}

// selection writes what the check selects as kubectl get would take it,
// which reads the same in both languages.
func (c ObjectCheck) selection() string {
	parts := []string{c.Resource.GroupResource().String()}
	if c.Name != "" {
		parts = append(parts, c.Name)
	}
	if c.Namespace != "" {
		parts = append(parts, "-n "+c.Namespace)
	}
	if c.Selector != "" {
		parts = append(parts, "-l "+c.Selector)
	}
	return strings.Join(parts, " ")
}

func (c ObjectCheck) Describe() []i18n.Message {
	sel := c.selection()
	var out []i18n.Message
	switch {
	case c.Min == c.Max:
		out = append(out, i18n.M("lessons.want.object-count", c.Min, sel))
	case c.Max < 0:
		out = append(out, i18n.M("lessons.want.object-min", c.Min, sel))
	case c.Min == 0:
		out = append(out, i18n.M("lessons.want.object-max", c.Max, sel))
	default:
		out = append(out, i18n.M("lessons.want.object-range", c.Min, c.Max, sel))
	}
	for _, t := range c.Where {
		out = append(out, i18n.M("lessons.want.object-where", t.String()))
	}
	if c.DistinctNodes > 0 {
		out = append(out, i18n.M("lessons.want.object-nodes", sel, c.DistinctNodes))
	}
	if c.NoneOnMasters {
		out = append(out, i18n.M("lessons.want.object-off-masters", sel))
	}
	return out
}

// selects reports whether an object is among those the check selects.
func (c ObjectCheck) selects(o ObjectObserved) bool {
	if c.Namespace != "" && o.Namespace != c.Namespace || c.Name != "" && o.Name != c.Name {
		return false
	}
	if _, deleting := nested(o.Object, "metadata", "deletionTimestamp"); deleting {
		return false
	}
	return c.selector == nil || c.selector.Matches(labels.Set(objectLabels(o.Object)))
}

func (c ObjectCheck) evaluate(_, now *world) Verdict {
	matched := 0
	nodes := map[string]bool{}
	var masters []string
	for _, o := range now.objectsOf(c.Resource.GroupResource()) {
		if !c.selects(o) {
			continue
		}
		node := nestedString(o.Object, "spec", "nodeName")
		if c.NoneOnMasters && onMaster(node) {
			masters = append(masters, o.Name+"@"+node)
		}
		if !c.fits(o) {
			continue
		}
		matched++
		if node != "" {
			nodes[node] = true
		}
	}
	msg := i18n.M("lessons.check.objects", matched, c.selection(), len(nodes))
	if len(masters) > 0 {
		sort.Strings(masters)
		return wait(msg, i18n.M("lessons.check.pods-on-masters", strings.Join(masters, ", ")))
	}
	if matched >= c.Min && (c.Max < 0 || matched <= c.Max) && len(nodes) >= c.DistinctNodes {
		return pass(msg)
	}
	return wait(msg)
}

// fits reports whether an object passes every field test.
func (c ObjectCheck) fits(o ObjectObserved) bool {
	for _, t := range c.Where {
		if !t.holds(o.Object) {
			return false
		}
	}
	return true
}

// maxObjects bounds an object count: far more than a lab holds.
const maxObjects = 10000

func (d *decoder) object(n *yaml.Node, path string) Check {
	f := d.params(n, path, "kind", "namespace", "labels", "name", "where", "count", "min", "max", "distinctNodes", "noneOnMasters")
	if f == nil {
		return nil
	}
	c := ObjectCheck{Max: -1}
	namespaced := true
	if kind, kn := f.str("kind", true); kn != nil && kind != "" {
		r, ok := lookupResource(kind)
		if !ok {
			d.fail(kn, field(path, "kind"), i18n.M("lessons.err.bad-kind", kind, resourceNames()))
		} else {
			c.Resource, namespaced = r.GroupVersionResource, r.Namespaced
		}
	}
	c.Namespace = d.namespace(f, path, namespaced)
	c.Selector, c.selector = d.selector(f, path, "labels")
	if name, nn := f.str("name", false); nn != nil {
		if !validName(name) {
			d.fail(nn, field(path, "name"), i18n.M("lessons.err.bad-name", name))
		}
		c.Name = name
	}
	c.Where = d.fieldTests(f, path, "where")
	count := f.integer("count", false, -1, 0, maxObjects)
	c.Min = f.integer("min", false, 1, 0, maxObjects)
	c.Max = f.integer("max", false, -1, 0, maxObjects)
	switch {
	case f.get("count") != nil && (f.get("min") != nil || f.get("max") != nil):
		d.fail(f.get("count"), field(path, "count"), i18n.M("lessons.err.count-or-bounds"))
	case count >= 0:
		c.Min, c.Max = count, count
	case f.get("max") != nil && f.get("min") == nil:
		c.Min = 0
	case c.Max >= 0 && c.Min > c.Max:
		d.fail(f.get("min"), field(path, "min"), i18n.M("lessons.err.min-max", "min", "max"))
	}
	c.DistinctNodes = f.integer("distinctNodes", false, 0, 1, maxMasters+maxWorkers)
	c.NoneOnMasters, _ = f.boolean("noneOnMasters")
	return c
}

// namespace reads a check's namespace: "default" when absent for a kind
// that lives in namespaces, refused for one that does not.
func (d *decoder) namespace(f *fields, path string, namespaced bool) string {
	ns, nn := f.str("namespace", false)
	switch {
	case nn == nil && namespaced:
		return "default"
	case nn == nil:
		return ""
	case !namespaced:
		d.fail(nn, field(path, "namespace"), i18n.M("lessons.err.not-namespaced"))
		return ""
	case !validID(ns):
		d.fail(nn, field(path, "namespace"), i18n.M("lessons.err.bad-id", ns))
	}
	return ns
}

// selector reads an optional label selector.
func (d *decoder) selector(f *fields, path, key string) (string, labels.Selector) {
	sel, sn := f.str(key, false)
	if sn == nil || strings.TrimSpace(sel) == "" {
		return "", nil
	}
	parsed, err := labels.Parse(sel)
	if err != nil {
		d.fail(sn, field(path, key), i18n.M("lessons.err.bad-selector", sel, err.Error()))
		return "", nil
	}
	return sel, parsed
}

// fieldTests reads a field test or a list of them.
func (d *decoder) fieldTests(f *fields, path, key string) []FieldTest {
	n := f.get(key)
	if n == nil {
		return nil
	}
	p := field(path, key)
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []FieldTest
	for i, item := range items {
		ip := p
		if n.Kind == yaml.SequenceNode {
			ip = index(p, i)
		}
		s, ok := d.scalar(item, ip)
		if !ok {
			continue
		}
		t, err := ParseFieldTest(s)
		if err != nil {
			d.failErr(item, ip, err)
			continue
		}
		out = append(out, t)
	}
	return out
}

// validName reports whether s can be a Kubernetes object's name: a DNS
// subdomain (lowercase letters, digits, - and .), as most kinds require.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" || len(part) > 63 || part[0] == '-' || part[len(part)-1] == '-' {
			return false
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}
