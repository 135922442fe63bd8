package lessons

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/klab-dev/klab/assets/i18n"
)

// APIRequestCheck passes when the API servers served at least Count
// requests matching it since the step began, whoever made them: kubectl
// in another terminal counts as much as the lesson's command line. An
// empty field matches anything.
//
//	api-request: {verb: list, resource: pods, namespace: kube-system}
//	api-request: {verb: create, resource: deployments, code: 2xx, user: kubernetes-admin}
type APIRequestCheck struct {
	Verb        string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// Code is a status code (201) or a class of them (2xx, 4xx).
	Code  string
	User  string
	Count int
}

func (APIRequestCheck) Kind() CheckKind { return KindAPIRequest }
func (APIRequestCheck) Needs() Needs    { return Needs{Requests: true} }

// summary writes the request as an audit log would, in both languages.
func (c APIRequestCheck) summary() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("verb", c.Verb)
	res := c.Resource
	if c.Subresource != "" {
		res += "/" + c.Subresource
	}
	add("resource", res)
	add("namespace", c.Namespace)
	add("name", c.Name)
	add("code", c.Code)
	add("user", c.User)
	return strings.Join(parts, " ")
}

func (c APIRequestCheck) Describe() []i18n.Message {
	return []i18n.Message{i18n.M("lessons.want.api-request", c.Count, c.summary())}
}

// codeMatches reports whether a status code is the check's code or in its
// class.
func (c APIRequestCheck) codeMatches(code int) bool {
	if c.Code == "" {
		return true
	}
	if strings.HasSuffix(c.Code, "xx") {
		return strconv.Itoa(code/100) == c.Code[:1]
	}
	return strconv.Itoa(code) == c.Code
}

func (c APIRequestCheck) matches(r RequestObserved) bool {
	return (c.Verb == "" || r.Verb == c.Verb) &&
		(c.Resource == "" || r.Resource == c.Resource) &&
		(c.Subresource == "" || r.Subresource == c.Subresource) &&
		(c.Namespace == "" || r.Namespace == c.Namespace) &&
		(c.Name == "" || r.Name == c.Name) &&
		(c.User == "" || r.User == c.User) &&
		c.codeMatches(r.Code)
}

func (c APIRequestCheck) evaluate(_, now *world) Verdict {
	n := 0
	var last RequestObserved
	for _, r := range now.requests {
		if c.matches(r) {
			n++
			last = r
		}
	}
	msg := i18n.M("lessons.check.requests", n, len(now.requests))
	if n == 0 {
		return wait(msg)
	}
	res := last.Resource
	if last.Subresource != "" {
		res += "/" + last.Subresource
	}
	if last.Namespace != "" {
		res = last.Namespace + "/" + res
	}
	var user any = last.User
	if last.User == "" {
		// A 401: no one was authenticated to name.
		user = i18n.M("lessons.check.request-unauthenticated")
	}
	seen := i18n.M("lessons.check.request-seen", last.Verb, res, last.Code, user, last.Server)
	if n >= c.Count {
		return pass(msg, seen)
	}
	return wait(msg, seen)
}

// requestVerbs are the verbs the API server names resource requests with.
var requestVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func (d *decoder) apiRequest(n *yaml.Node, path string) Check {
	f := d.params(n, path, "verb", "resource", "subresource", "namespace", "name", "code", "user", "count")
	if f == nil {
		return nil
	}
	c := APIRequestCheck{}
	if v, vn := f.str("verb", false); vn != nil {
		if !contains(requestVerbs, v) {
			d.fail(vn, field(path, "verb"), i18n.M("lessons.err.bad-choice", v, strings.Join(requestVerbs, ", ")))
		}
		c.Verb = v
	}
	res, rn := f.str("resource", false)
	if rn != nil {
		r, ok := lookupResource(res)
		if !ok {
			d.fail(rn, field(path, "resource"), i18n.M("lessons.err.bad-kind", res, resourceNames()))
		} else {
			c.Resource = r.Resource
			if sub, sn := f.str("subresource", false); sn != nil {
				if !r.HasSubresource(sub) {
					d.fail(sn, field(path, "subresource"), i18n.M("lessons.err.bad-choice", sub, strings.Join(r.Subresources, ", ")))
				}
				c.Subresource = sub
			}
		}
	} else if sn := f.get("subresource"); sn != nil {
		d.fail(sn, field(path, "subresource"), i18n.M("lessons.err.needs-key", "subresource", "resource"))
	}
	if ns, nn := f.str("namespace", false); nn != nil {
		if !validID(ns) {
			d.fail(nn, field(path, "namespace"), i18n.M("lessons.err.bad-id", ns))
		}
		c.Namespace = ns
	}
	if name, nn := f.str("name", false); nn != nil {
		if !validName(name) {
			d.fail(nn, field(path, "name"), i18n.M("lessons.err.bad-name", name))
		}
		c.Name = name
	}
	if code, cn := f.str("code", false); cn != nil {
		if !validCode(code) {
			d.fail(cn, field(path, "code"), i18n.M("lessons.err.bad-code", code))
		}
		c.Code = code
	}
	c.User, _ = f.str("user", false)
	c.Count = f.integer("count", false, 1, 1, maxObjects)
	if c.Verb == "" && c.Resource == "" && f.node != nil {
		d.fail(f.node, path, i18n.M("lessons.err.need-one-of", "verb, resource"))
	}
	return c
}

// validCode reports whether s is an HTTP status code (100 to 599) or a
// class of them (1xx to 5xx).
func validCode(s string) bool {
	if len(s) == 3 && s[1:] == "xx" {
		return s[0] >= '1' && s[0] <= '5'
	}
	n, err := strconv.Atoi(s)
	return err == nil && len(s) == 3 && n >= 100 && n <= 599
}
