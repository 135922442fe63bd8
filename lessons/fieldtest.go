package lessons

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/client-go/util/jsonpath"

	"github.com/klab-dev/klab/assets/i18n"
)

// FieldTest is a test of one field of an object, as a lesson writes it:
// a JSONPath as kubectl -o jsonpath takes it, then an operator and a
// value, or exists or absent:
//
//	{.status.phase} == Running
//	{.status.phase} != Pending
//	{.spec.nodeName} exists
//	{.metadata.deletionTimestamp} absent
//	{.status.readyReplicas} >= 3
//
// A path alone means exists. == holds when one of the values the path
// finds is the value; ^= when one starts with it (a Lease's holder,
// "{.spec.holderIdentity} ^= master-1_", whatever its random suffix); != when none is (an absent field is not Running);
// <, <=, > and >= compare numbers, and hold when one value does.
type FieldTest struct {
	// Path is the JSONPath, braces included.
	Path  string
	Op    FieldOp
	Value string
	// number is Value as a number, for the comparisons.
	number float64
}

// FieldOp is a field test's operator.
type FieldOp string

// The operators.
const (
	OpEqual        FieldOp = "=="
	OpNotEqual     FieldOp = "!="
	OpPrefix       FieldOp = "^="
	OpLess         FieldOp = "<"
	OpLessEqual    FieldOp = "<="
	OpGreater      FieldOp = ">"
	OpGreaterEqual FieldOp = ">="
	OpExists       FieldOp = "exists"
	OpAbsent       FieldOp = "absent"
)

var fieldOps = []FieldOp{OpEqual, OpNotEqual, OpPrefix, OpLessEqual, OpGreaterEqual, OpLess, OpGreater, OpExists, OpAbsent}

// maxFieldTest bounds a field test's length: a lesson's tests are short.
const maxFieldTest = 256

// ParseFieldTest reads a field test; the error is an *i18n.Error that says
// what is wrong.
func ParseFieldTest(s string) (FieldTest, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxFieldTest {
		return FieldTest{}, i18n.NewError("lessons.err.field-long", maxFieldTest)
	}
	if !strings.HasPrefix(s, "{") {
		return FieldTest{}, i18n.NewError("lessons.err.field-syntax", s)
	}
	end := closingBrace(s)
	if end < 0 {
		return FieldTest{}, i18n.NewError("lessons.err.field-syntax", s)
	}
	t := FieldTest{Path: s[:end+1], Op: OpExists}
	if err := checkPath(t.Path); err != nil {
		return FieldTest{}, i18n.NewError("lessons.err.bad-jsonpath", t.Path, err.Error())
	}
	rest := strings.TrimSpace(s[end+1:])
	if rest == "" {
		return t, nil
	}
	op, value, found := FieldOp(""), "", false
	for _, o := range fieldOps {
		if strings.HasPrefix(rest, string(o)) {
			op, value, found = o, strings.TrimSpace(rest[len(o):]), true
			break
		}
	}
	if !found {
		return FieldTest{}, i18n.NewError("lessons.err.field-op", rest, opNames())
	}
	t.Op = op
	switch op {
	case OpExists, OpAbsent:
		if value != "" {
			return FieldTest{}, i18n.NewError("lessons.err.field-extra", string(op), value)
		}
	case OpEqual, OpNotEqual, OpPrefix:
		if value == "" {
			return FieldTest{}, i18n.NewError("lessons.err.field-value", string(op))
		}
		t.Value = unquote(value)
	default:
		n, err := strconv.ParseFloat(value, 64)
		if err != nil || n != n {
			return FieldTest{}, i18n.NewError("lessons.err.field-number", string(op), value)
		}
		t.Value, t.number = value, n
	}
	return t, nil
}

// closingBrace returns the index of the brace that closes s's first, or
// -1; braces inside quotes do not count.
func closingBrace(s string) int {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// checkPath parses a JSONPath and requires it to be one expression: text
// around it, or a range, means nothing in a test.
func checkPath(path string) error {
	p, err := jsonpath.Parse("field", path)
	if err != nil {
		return err
	}
	if len(p.Root.Nodes) != 1 || p.Root.Nodes[0].Type() != jsonpath.NodeList {
		return fmt.Errorf("want one expression in braces")
	}
	for _, n := range p.Root.Nodes[0].(*jsonpath.ListNode).Nodes {
		if n.Type() == jsonpath.NodeText {
			return fmt.Errorf("want one expression in braces")
		}
	}
	return nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

func opNames() string {
	names := make([]string, len(fieldOps))
	for i, o := range fieldOps {
		names[i] = string(o)
	}
	return strings.Join(names, ", ")
}

// String returns the test as a lesson writes it.
func (t FieldTest) String() string {
	switch t.Op {
	case OpExists:
		return t.Path + " exists"
	case OpAbsent:
		return t.Path + " absent"
	}
	return t.Path + " " + string(t.Op) + " " + t.Value
}

// values returns the values the path finds in obj, as text: strings as
// they are, numbers and booleans as JSON writes them. A path that finds
// nothing, or that the object's shape does not fit, gives none.
func (t FieldTest) values(obj map[string]any) []string {
	// A JSONPath keeps state while it runs: parsing it again each time
	// keeps a check safe to judge from several evaluators.
	jp := jsonpath.New("field").AllowMissingKeys(true)
	if err := jp.Parse(t.Path); err != nil {
		return nil
	}
	results, err := jp.FindResults(obj)
	if err != nil {
		return nil
	}
	var out []string
	for _, set := range results {
		for _, v := range set {
			if s, ok := text(v); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// text renders one value found; a nil (a JSON null) is no value.
func text(v reflect.Value) (string, bool) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", false
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	}
	return fmt.Sprint(v.Interface()), true
}

// holds reports whether obj passes the test.
func (t FieldTest) holds(obj map[string]any) bool {
	vals := t.values(obj)
	switch t.Op {
	case OpExists:
		return len(vals) > 0
	case OpAbsent:
		return len(vals) == 0
	case OpEqual:
		return contains(vals, t.Value)
	case OpNotEqual:
		return !contains(vals, t.Value)
	case OpPrefix:
		for _, v := range vals {
			if strings.HasPrefix(v, t.Value) {
				return true
			}
		}
		return false
	}
	for _, s := range vals {
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			continue
		}
		switch t.Op {
		case OpLess:
			if n < t.number {
				return true
			}
		case OpLessEqual:
			if n <= t.number {
				return true
			}
		case OpGreater:
			if n > t.number {
				return true
			}
		case OpGreaterEqual:
			if n >= t.number {
				return true
			}
		}
	}
	return false
}
