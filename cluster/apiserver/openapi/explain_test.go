package openapi

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
)

// TestExplain renders `kubectl explain` output with kubectl's own v3
// templates from the served documents.
func TestExplain(t *testing.T) {
	f := newFixture(t)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	tests := []struct {
		name    string
		gvr     schema.GroupVersionResource
		path    string
		want    []string
		wantErr string
	}{
		{
			name: "kubectl explain pods",
			gvr:  pods, path: "",
			want: []string{"KIND:       Pod\n", "VERSION:    v1\n", "  metadata\t<ObjectMeta>\n", "  spec\t<PodSpec>\n",
				"Pod is a collection of containers"},
		},
		{
			name: "kubectl explain pods.spec",
			gvr:  pods, path: "spec",
			want: []string{"FIELD: spec <PodSpec>\n", "  containers\t<[]Container> -required-\n", "  nodeSelector\t<map[string]string>\n",
				"  restartPolicy\t<string>\n"},
		},
		{
			name: "time fields are strings",
			gvr:  pods, path: "metadata.creationTimestamp",
			want: []string{"FIELD: creationTimestamp <string>\n"},
		},
		{
			name: "resource maps show their value type",
			gvr:  pods, path: "spec.containers.resources.limits",
			want: []string{"FIELD: limits <map[string]Quantity>\n"},
		},
		{
			name: "kubectl explain deployments.spec.strategy",
			gvr:  deployments, path: "spec.strategy",
			want: []string{"GROUP:      apps\n", "KIND:       Deployment\n", "FIELD: strategy <DeploymentStrategy>\n",
				"  rollingUpdate\t<RollingUpdateDeployment>\n"},
		},
		{
			name: "an unknown field is reported as upstream",
			gvr:  pods, path: "spec.nope",
			wantErr: `field "nope" does not exist`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fields []string
			if tt.path != "" {
				fields = strings.Split(tt.path, ".")
			}
			var out bytes.Buffer
			err := explainv2.PrintModelDescription(fields, &out, f.openAPIV3, tt.gvr, false, 0, "plaintext")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("explain %s = %v, want error containing %q", tt.path, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("explain %s: %v", tt.path, err)
			}
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("explain %s output lacks %q:\n%s", tt.path, want, out.String())
				}
			}
		})
	}
}
