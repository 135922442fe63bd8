package traffic

import "testing"

func TestNormalizeReason(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"refusal keeps the endpoint",
			"503 Service Unavailable: dial tcp 10.244.1.7:8080: connect: connection refused",
			"503 Service Unavailable: dial tcp 10.244.1.7:8080: connect: connection refused"},
		{"ephemeral source port dropped",
			"read tcp 127.0.0.1:51234->127.0.0.1:8080: read: connection reset by peer",
			"read tcp 127.0.0.1:8080: read: connection reset by peer"},
		{"IPv6 source dropped",
			"write tcp [::1]:40000->[::1]:10256: write: broken pipe",
			"write tcp [::1]:10256: write: broken pipe"},
		{"timestamp",
			"503 Service Unavailable: endpoint 10.244.1.7:8080 down since 2025-03-01T10:22:33.123Z",
			"503 Service Unavailable: endpoint 10.244.1.7:8080 down since <time>"},
		{"measured duration",
			"503 Service Unavailable: dial tcp 10.244.1.7:8080: gave up after 1.002345s",
			"503 Service Unavailable: dial tcp 10.244.1.7:8080: gave up after <duration>"},
		{"configured duration kept", "no answer within 5s", "no answer within 5s"},
		{"first line only", "HTTP 500 Internal Server Error: boom\nstack trace", "HTTP 500 Internal Server Error: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalizeReason(tt.in); got != tt.want {
				t.Errorf("normalizeReason(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}
