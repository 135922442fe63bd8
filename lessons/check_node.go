package lessons

import (
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/klab-dev/klab/assets/i18n"
)

// NodeConditionCheck passes when a node's condition of type Type has
// status Status, or, with Absent, when it does not. Without Node, any
// node will do (and with Absent, every node must do).
//
//	node-condition: {node: worker-1, type: Ready, status: "False"}
//	node-condition: {type: MemoryPressure, status: "True", absent: true}
type NodeConditionCheck struct {
	Node         string
	Type, Status string
	Absent       bool
}

// NodeTaintCheck passes when a node has a taint with key Key (and effect
// Effect, if given), or, with Absent, when it has none. Without Node, any
// node will do (and with Absent, every node must do).
//
//	node-taint: {node: worker-2, key: node.kubernetes.io/unschedulable}
//	node-taint: {node: master-1, key: node-role.kubernetes.io/control-plane, effect: NoSchedule, absent: true}
type NodeTaintCheck struct {
	Node        string
	Key, Effect string
	Absent      bool
}

func (NodeConditionCheck) Kind() CheckKind { return KindNodeCondition }
func (NodeTaintCheck) Kind() CheckKind     { return KindNodeTaint }

func (NodeConditionCheck) Needs() Needs {
	return Needs{Objects: []schema.GroupVersionResource{nodesResource}}
}

func (NodeTaintCheck) Needs() Needs {
	return Needs{Objects: []schema.GroupVersionResource{nodesResource}}
}

// describeNode says what a node check waits for: key, with -absent when
// absent, and -any (without the node) when any node will do.
func describeNode(key, node string, absent bool, what string) i18n.Message {
	if absent {
		key += "-absent"
	}
	if node == "" {
		return i18n.M(key+"-any", what)
	}
	return i18n.M(key, node, what)
}

func (c NodeConditionCheck) Describe() []i18n.Message {
	return []i18n.Message{describeNode("lessons.want.node-condition", c.Node, c.Absent, c.Type+"="+c.Status)}
}

func (c NodeTaintCheck) Describe() []i18n.Message {
	return []i18n.Message{describeNode("lessons.want.node-taint", c.Node, c.Absent, c.taint())}
}

func (c NodeTaintCheck) taint() string {
	if c.Effect == "" {
		return c.Key
	}
	return c.Key + ":" + c.Effect
}

// judgeNodes applies has to the node named, or to every node, and judges:
// present needs one node that has it, absent needs every node without it.
func judgeNodes(now *world, node string, absent bool, has func(obj map[string]any) (bool, string)) Verdict {
	var reasons []i18n.Message
	seen, with := 0, 0
	for _, o := range now.objectsOf(nodesResource.GroupResource()) {
		if node != "" && o.Name != node {
			continue
		}
		seen++
		ok, state := has(o.Object)
		if ok {
			with++
		}
		if ok != absent {
			reasons = append(reasons, i18n.M("lessons.check.node-state", o.Name, state))
		}
	}
	if seen == 0 && node == "" {
		return wait(i18n.M("lessons.check.nodes-unseen"))
	}
	if seen == 0 {
		return wait(i18n.M("lessons.check.node-unseen", node))
	}
	if absent {
		if with == 0 {
			return pass(i18n.M("lessons.check.node-none-has", seen))
		}
		return wait(reasons...)
	}
	if with > 0 {
		return pass(reasons...)
	}
	return wait(i18n.M("lessons.check.node-none-has", seen))
}

func (c NodeConditionCheck) evaluate(_, now *world) Verdict {
	return judgeNodes(now, c.Node, c.Absent, func(obj map[string]any) (bool, string) {
		for _, cond := range nestedList(obj, "status", "conditions") {
			if cond["type"] == c.Type {
				status, _ := cond["status"].(string)
				return status == c.Status, c.Type + "=" + status
			}
		}
		return false, c.Type + "=?"
	})
}

func (c NodeTaintCheck) evaluate(_, now *world) Verdict {
	return judgeNodes(now, c.Node, c.Absent, func(obj map[string]any) (bool, string) {
		var taints []string
		found := false
		for _, t := range nestedList(obj, "spec", "taints") {
			key, _ := t["key"].(string)
			effect, _ := t["effect"].(string)
			taints = append(taints, key+":"+effect)
			if key == c.Key && (c.Effect == "" || effect == c.Effect) {
				found = true
			}
		}
		if len(taints) == 0 {
			return found, "-"
		}
		return found, strings.Join(taints, ", ")
	})
}

// The values node conditions and taints take.
var (
	conditionStatuses = []string{"True", "False", "Unknown"}
	taintEffects      = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
)

// nodeParam reads the optional node a node check reads.
func (d *decoder) nodeParam(f *fields, path string) string {
	node, nn := f.str("node", false)
	if nn != nil && !validID(node) {
		d.fail(nn, field(path, "node"), i18n.M("lessons.err.bad-id", node))
	}
	return node
}

func (d *decoder) nodeCondition(n *yaml.Node, path string) Check {
	f := d.params(n, path, "node", "type", "status", "absent")
	if f == nil {
		return nil
	}
	c := NodeConditionCheck{Node: d.nodeParam(f, path)}
	c.Type, _ = f.str("type", true)
	status, sn := f.str("status", true)
	if sn != nil && status != "" && !contains(conditionStatuses, status) {
		d.fail(sn, field(path, "status"), i18n.M("lessons.err.bad-choice", status, strings.Join(conditionStatuses, ", ")))
	}
	c.Status = status
	c.Absent, _ = f.boolean("absent")
	return c
}

func (d *decoder) nodeTaint(n *yaml.Node, path string) Check {
	f := d.params(n, path, "node", "key", "effect", "absent")
	if f == nil {
		return nil
	}
	c := NodeTaintCheck{Node: d.nodeParam(f, path)}
	c.Key, _ = f.str("key", true)
	if effect, en := f.str("effect", false); en != nil {
		if !contains(taintEffects, effect) {
			d.fail(en, field(path, "effect"), i18n.M("lessons.err.bad-choice", effect, strings.Join(taintEffects, ", ")))
		}
		c.Effect = effect
	}
	c.Absent, _ = f.boolean("absent")
	return c
}
