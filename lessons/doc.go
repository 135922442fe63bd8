// Package lessons is klab's lesson engine: it loads the bilingual lessons in
// content/*.yaml, evaluates each step's check against the running cluster,
// and keeps the student's progress.
package lessons
