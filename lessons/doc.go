// Package lessons is klab's lesson engine: it loads the bilingual lessons in
// content/*.yaml, judges each step's check against what the Observer sees
// of the running cluster, and keeps the student's progress.
//
// # Lesson files
//
// A lesson is one YAML document:
//
//	id: raft-election            # lowercase letters, digits and '-'
//	order: 30                    # position in the lesson list
//	title:   {ko: ..., en: ...}
//	summary: {ko: ..., en: ...}
//	cluster: {masters: 3, workers: 1, speed: 1}
//	steps:
//	  - id: kill-leader
//	    title: {ko: ..., en: ...}
//	    body:  {ko: ..., en: ...}  # Markdown
//	    view: raft                 # overview, raft, scheduler, proxy or events
//	    try: [klab chaos kill leader]
//	    hints:
//	      - {ko: ..., en: ...}
//	    check:
//	      leader-changed: {}
//	    solution: [klab chaos kill leader]
//
// Every text a student reads is a map with both a Korean (ko) and an English
// (en) text, neither empty: each language is written on its own, not
// translated from the other. A step may also give a cluster shape of its own
// (cluster: {masters: 5, workers: 1}); the engine then brings the cluster to
// that shape before the step, which is why a solution never holds klab up or
// klab down. Commands in try and solution are klab command lines, one
// command per entry, quoted as in a shell but without pipes, redirections or
// &&, since the TUI's command line runs them without a shell.
//
// Where a fact differs between klab's runtimes, the Markdown holds a
// passage for each, fenced by lines of their own:
//
//	::: docker
//	`docker ps` lists the pod's sandbox and its container.
//	:::
//	::: local
//	The pod's containers run inside the klab process.
//	:::
//
// The TUI shows the passages of the cluster's runtime; klab lessons show,
// with no cluster to ask, shows both under their runtime's name. The
// Korean and the English text must have the same passages in the same
// order.
//
// The loader is strict, as a lesson that silently loses a hint or a check is
// worse than one that does not load: unknown keys at any depth, a missing
// translation, an unknown view or check, a bad parameter, and ids used twice
// are all reported, every one of them, at the file, line and column where
// they are, with the path of the field ("steps[2].hints[0]").
//
// # Checks
//
// A check is one of a closed set of conditions (CheckKinds lists them), each
// a Go type with typed parameters checked when the lesson loads. Checks are
// judged by an Evaluator on observations (Observation): the integrator feeds
// it what the Observer reports about the etcd members and what the
// Kubernetes watches report about nodes and pods, plus the keys a check
// watches and the commands the student (or the engine) ran. Nothing is
// polled: a verdict changes only when an observation arrives. A check is
// judged against the cluster as it is now and as it was when the step
// began, so that "a new leader" means new since the step began, and a step
// passes the first time its condition holds.
//
// The typed checks (object, event, api-request, etcd-request,
// lease-holder-changed, node-condition, node-taint, proxy-mode,
// proxy-service, traffic) read what the cluster saw rather than what was
// typed where: objects of any kind from watches, Events, every API
// server's and every etcd member's request stream, the kube-proxies' modes
// and programmed Services, and the last traffic run. A kubectl or etcdctl
// in a second terminal passes a step as well as the lesson's command line
// does. Their Needs say what to follow (lessons/live's Feed.Follow).
//
// # Progress
//
// Progress records, per lesson, the steps the student completed and the step
// they were on, in one JSON file written atomically (see OpenProgress).
package lessons
