package lessons

import (
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// KeyExistsCheck passes when an etcd key exists, holding Value if one is
// given.
//
//	key-exists: {key: /klab/greeting, value: hello}
type KeyExistsCheck struct {
	Key string
	// Value, when set, is the value the key must hold.
	Value *string
}

// WriteRefusedCheck passes when a write to etcd (etcdctl put, del or txn),
// of Key if one is given, failed since the step began because the cluster
// could not commit it: etcd answered "no leader" or "request timed out",
// or etcdctl gave up waiting. A write that fails for another reason (a
// missing argument, say) does not count.
//
//	write-refused: {}
type WriteRefusedCheck struct{ Key string }

func (KeyExistsCheck) Kind() CheckKind    { return KindKeyExists }
func (WriteRefusedCheck) Kind() CheckKind { return KindWriteRefused }

func (c KeyExistsCheck) Needs() Needs  { return Needs{Keys: []string{c.Key}} }
func (WriteRefusedCheck) Needs() Needs { return Needs{Commands: true} }

func (c KeyExistsCheck) Describe() []i18n.Message {
	if c.Value != nil {
		return []i18n.Message{i18n.M("lessons.want.key-value", c.Key, *c.Value)}
	}
	return []i18n.Message{i18n.M("lessons.want.key", c.Key)}
}

func (c WriteRefusedCheck) Describe() []i18n.Message {
	if c.Key != "" {
		return []i18n.Message{i18n.M("lessons.want.write-refused-key", c.Key)}
	}
	return []i18n.Message{i18n.M("lessons.want.write-refused")}
}

func (c KeyExistsCheck) evaluate(_, now *world) Verdict {
	v, ok := now.keys[c.Key]
	if !ok {
		return wait(i18n.M("lessons.check.key-missing", c.Key))
	}
	msg := i18n.M("lessons.check.key-holds", c.Key, shorten(v, maxValueShown))
	if c.Value != nil && v != *c.Value {
		return wait(msg)
	}
	return pass(msg)
}

// maxValueShown bounds how much of a key's value a reason quotes: an object
// under /registry is a whole JSON document.
const maxValueShown = 40

// shorten cuts s to at most n characters, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// refusals are what etcd and etcdctl say when a write cannot be committed:
// the member has no leader, the proposal was not committed in time, or the
// client gave up waiting for an answer.
var refusals = []string{"no leader", "timed out", "deadline exceeded"}

func (c WriteRefusedCheck) evaluate(_, now *world) Verdict {
	var accepted *CommandObserved
	for i := range now.commands {
		cmd := &now.commands[i]
		verb, key, ok := etcdWrite(cmd.Args)
		if !ok || c.Key != "" && verb != "txn" && key != c.Key {
			continue
		}
		if cmd.Err == nil {
			accepted = cmd
			continue
		}
		why := errorLine(failure(cmd))
		for _, r := range refusals {
			if strings.Contains(strings.ToLower(why), r) {
				return pass(i18n.M("lessons.check.write-refused", commandLine(cmd.Args), why))
			}
		}
	}
	if accepted != nil {
		return wait(i18n.M("lessons.check.write-accepted", commandLine(accepted.Args)))
	}
	return wait(i18n.M("lessons.check.no-write"))
}

// etcdctlValueFlags are etcdctl's global flags that take their value as the
// next word when written without "=" (and klab's --name).
var etcdctlValueFlags = []string{
	"--endpoints", "--command-timeout", "--dial-timeout", "--keepalive-time", "--keepalive-timeout",
	"--cacert", "--cert", "--key", "--user", "--password", "--write-out", "-w", "--discovery-srv", "-d",
	"--name",
}

// etcdWrite reports whether args run an etcdctl write, with its verb and,
// for put and del, its key.
func etcdWrite(args []string) (verb, key string, ok bool) {
	args = withoutKlab(args)
	if len(args) == 0 || args[0] != "etcdctl" {
		return "", "", false
	}
	var words []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			words = append(words, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-"):
			if contains(etcdctlValueFlags, a) {
				i++
			}
		default:
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return "", "", false
	}
	switch words[0] {
	case "put", "del", "txn":
		if len(words) > 1 {
			key = words[1]
		}
		return words[0], key, true
	}
	return "", "", false
}

func (d *decoder) keyExists(n *yaml.Node, path string) Check {
	f := d.params(n, path, "key", "value")
	if f == nil {
		return nil
	}
	c := KeyExistsCheck{}
	c.Key, _ = f.str("key", true)
	if v, vn := f.str("value", false); vn != nil {
		c.Value = &v
	}
	return c
}

func (d *decoder) writeRefused(n *yaml.Node, path string) Check {
	f := d.params(n, path, "key")
	if f == nil {
		return nil
	}
	key, kn := f.str("key", false)
	if kn != nil && key == "" {
		d.fail(kn, field(path, "key"), i18n.M("lessons.err.empty"))
	}
	return WriteRefusedCheck{Key: key}
}
