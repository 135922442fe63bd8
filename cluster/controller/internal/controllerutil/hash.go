package controllerutil

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/davecgh/go-spew/spew"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ComputeHash returns the pod-template hash upstream's ComputeHash returns:
// FNV-32a over a deterministic dump of the template (spew with sorted keys,
// methods disabled), then the collision count if there is one, rendered as
// a decimal string through rand.SafeEncodeString (no vowels, so a hash
// never spells a word). The dump walks the Go struct, so klab and upstream
// agree on the hash of the same k8s.io/api version's template.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	hasher := fnv.New32a()
	printer := spew.ConfigState{
		Indent:         " ",
		SortKeys:       true,
		DisableMethods: true,
		SpewKeys:       true,
	}
	printer.Fprintf(hasher, "%#v", *template)
	if collisionCount != nil {
		// Eight bytes with the count in the low four, little-endian, as
		// upstream writes it.
		buf := make([]byte, 8)
		binary.LittleEndian.PutUint32(buf, uint32(*collisionCount))
		hasher.Write(buf)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
}
