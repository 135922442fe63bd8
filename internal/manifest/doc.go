// Package manifest checks Kubernetes manifest files before klab hands them to
// kubectl, so that a syntax error is reported at the file's own line.
//
// kubectl splits a multi-document YAML file into documents and parses each
// one on its own, so the line in its "yaml: line 3: ..." messages counts from
// the start of the document, not of the file. Check splits the file the same
// way kubectl does (k8s.io/apimachinery's YAMLReader: a line that starts with
// "---" and has nothing after it but blanks or a comment), parses each
// document with the YAML library kubectl uses (go.yaml.in/yaml/v2, through
// sigs.k8s.io/yaml), and adds the line the document starts at. The messages
// and the lines are therefore kubectl's own, moved to the file's numbering,
// and a file Check accepts is one kubectl parses.
//
// A "---" line inside a block scalar does not split a document only when it
// is indented, which YAML requires of block scalar content anyway: a "---" at
// the start of a line always ends the document, in YAML as in kubectl. A
// document end marker ("...") followed by more content in the same section is
// not split further; kubectl reads only the section's first document, and so
// does Check.
//
// A file whose first non-blank character is "{" is read as a stream of JSON
// objects, as kubectl does; if that fails and the file does not parse as YAML
// either, the JSON error is reported, again as kubectl does.
package manifest
