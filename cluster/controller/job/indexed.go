package job

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/klab-dev/klab/cluster/controller/internal/controllerutil"
)

// An Indexed Job runs one successful pod per index 0..completions-1. The
// index is in the pod's batch.kubernetes.io/job-completion-index
// annotation and label, its hostname (<job>-<index>) and its
// JOB_COMPLETION_INDEX environment variable; status.completedIndexes
// lists the succeeded ones as intervals ("1,3-5").

const (
	completionIndexEnvName = "JOB_COMPLETION_INDEX"
	unknownCompletionIndex = -1
	// maxGeneratedNameLength is how long a generateName may be: the API
	// server appends five random characters to a name of at most 63.
	maxGeneratedNameLength = 58
)

func isIndexedJob(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// interval is a range of indexes, both ends included.
type interval struct{ first, last int }

// orderedIntervals are disjoint, non-adjacent and sorted.
type orderedIntervals []interval

// calculateSucceededIndexes returns the indexes recorded in the status,
// and those plus the indexes of succeeded pods not counted yet (they
// still carry the finalizer).
func calculateSucceededIndexes(job *batchv1.Job, pods []*corev1.Pod) (prev, now orderedIntervals) {
	prev = parseIndexesFromString(job.Status.CompletedIndexes, int(*job.Spec.Completions))
	succeeded := sets.New[int]()
	for _, p := range pods {
		ix := getCompletionIndex(p.Annotations)
		if p.Status.Phase == corev1.PodSucceeded && ix != unknownCompletionIndex && ix < int(*job.Spec.Completions) && hasJobTrackingFinalizer(p) {
			succeeded.Insert(ix)
		}
	}
	return prev, prev.withOrderedIndexes(sets.List(succeeded))
}

// withOrderedIndexes returns the intervals plus the given sorted indexes.
func (oi orderedIntervals) withOrderedIndexes(indexes []int) orderedIntervals {
	add := make(orderedIntervals, len(indexes))
	for i, ix := range indexes {
		add[i] = interval{ix, ix}
	}
	return oi.merge(add)
}

// merge returns the union of two interval lists.
func (oi orderedIntervals) merge(other orderedIntervals) orderedIntervals {
	all := append(append(orderedIntervals(nil), oi...), other...)
	slices.SortStableFunc(all, func(a, b interval) int { return a.first - b.first })
	var out orderedIntervals
	for _, iv := range all {
		if n := len(out); n > 0 && iv.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, iv.last)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// total counts the indexes.
func (oi orderedIntervals) total() int {
	n := 0
	for _, iv := range oi {
		n += iv.last - iv.first + 1
	}
	return n
}

// String writes the intervals as status.completedIndexes does: two
// adjacent indexes as "a,b", longer runs as "a-b".
func (oi orderedIntervals) String() string {
	var b strings.Builder
	for _, iv := range oi {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(iv.first))
		switch {
		case iv.last == iv.first+1:
			b.WriteString("," + strconv.Itoa(iv.last))
		case iv.last > iv.first:
			b.WriteString("-" + strconv.Itoa(iv.last))
		}
	}
	return b.String()
}

func (oi orderedIntervals) has(ix int) bool {
	i, _ := slices.BinarySearchFunc(oi, ix, func(iv interval, ix int) int { return iv.last - ix })
	return i < len(oi) && oi[i].first <= ix
}

// parseIndexesFromString reads status.completedIndexes, ignoring
// corrupted entries and indexes beyond completions.
func parseIndexesFromString(s string, completions int) orderedIntervals {
	if s == "" {
		return nil
	}
	var out orderedIntervals
	for _, part := range strings.Split(s, ",") {
		limits := strings.Split(part, "-")
		first, err := strconv.Atoi(limits[0])
		if err != nil {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if len(limits) > 1 {
			if last, err = strconv.Atoi(limits[1]); err != nil {
				continue
			}
			last = min(last, completions-1)
		}
		if n := len(out); n > 0 && out[n-1].last == first-1 {
			out[n-1].last = last
			continue
		}
		out = append(out, interval{first, last})
	}
	return out
}

// firstPendingIndexes returns up to count indexes below completions that
// no active pod runs and that did not succeed yet, lowest first.
func firstPendingIndexes(jobCtx *syncJobCtx, count, completions int) []int {
	if count == 0 {
		return nil
	}
	active := sets.New[int]()
	for _, p := range jobCtx.activePods {
		if ix := getCompletionIndex(p.Annotations); ix != unknownCompletionIndex {
			active.Insert(ix)
		}
	}
	if onlyReplaceFailedPods(jobCtx.job) {
		for _, p := range jobCtx.pods {
			if controllerutil.IsPodTerminating(p) {
				if ix := getCompletionIndex(p.Annotations); ix != unknownCompletionIndex {
					active.Insert(ix)
				}
			}
		}
	}
	var out []int
	for ix := 0; ix < completions && len(out) < count; ix++ {
		if !active.Has(ix) && !jobCtx.succeededIndexes.has(ix) {
			out = append(out, ix)
		}
	}
	return out
}

// duplicatedIndexPodsForRemoval splits active pods into those to remove
// (no index, an index beyond completions, or a second pod of an index:
// the one deleted first by ActivePods order) and the rest.
func duplicatedIndexPodsForRemoval(pods []*corev1.Pod, completions int) (rm, left []*corev1.Pod) {
	byIndex := map[int][]*corev1.Pod{}
	var indexes []int
	for _, p := range pods {
		ix := getCompletionIndex(p.Annotations)
		if ix == unknownCompletionIndex || ix >= completions {
			rm = append(rm, p)
			continue
		}
		if _, ok := byIndex[ix]; !ok {
			indexes = append(indexes, ix)
		}
		byIndex[ix] = append(byIndex[ix], p)
	}
	slices.Sort(indexes)
	for _, ix := range indexes {
		same := byIndex[ix]
		sort.Sort(controllerutil.ActivePods(same))
		rm = append(rm, same[:len(same)-1]...)
		left = append(left, same[len(same)-1])
	}
	return rm, left
}

func getCompletionIndex(annotations map[string]string) int {
	v, ok := annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return unknownCompletionIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return unknownCompletionIndex
	}
	return ix
}

// addCompletionIndexEnvVariables gives every container
// JOB_COMPLETION_INDEX from the pod's index annotation.
func addCompletionIndexEnvVariables(t *corev1.PodTemplateSpec) {
	add := func(c *corev1.Container) {
		for _, e := range c.Env {
			if e.Name == completionIndexEnvName {
				return
			}
		}
		c.Env = append(c.Env, corev1.EnvVar{
			Name: completionIndexEnvName,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation),
			}},
		})
	}
	for i := range t.Spec.InitContainers {
		add(&t.Spec.InitContainers[i])
	}
	for i := range t.Spec.Containers {
		add(&t.Spec.Containers[i])
	}
}

// indexedTemplate is the pod template of one index.
func indexedTemplate(job *batchv1.Job, base *corev1.PodTemplateSpec, ix int) (*corev1.PodTemplateSpec, string) {
	t := base.DeepCopy()
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	t.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
	suffix := "-" + strconv.Itoa(ix) + "-"
	prefix := job.Name + suffix
	if len(prefix) > maxGeneratedNameLength {
		prefix = job.Name[:maxGeneratedNameLength-len(suffix)] + suffix
	}
	return t, prefix
}
