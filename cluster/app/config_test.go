package app

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, cfg config)
		wantErr string
	}{
		{
			name: "defaults",
			check: func(t *testing.T, cfg config) {
				if cfg.port != DefaultPort || cfg.crashExitCode != 1 || cfg.exitCode != 0 ||
					cfg.memoryGrowInterval != time.Second || !cfg.logRequests || len(cfg.switches) != 0 {
					t.Errorf("defaults = %+v", cfg)
				}
			},
		},
		{
			name: "flags with double dashes",
			args: []string{"--port=9090", "--fail-liveness-after", "30s", "--memory", "64Mi", "--exit-code=3"},
			check: func(t *testing.T, cfg config) {
				if cfg.port != 9090 || cfg.failLivenessAfter != 30*time.Second || cfg.memory != 64<<20 || cfg.exitCode != 3 {
					t.Errorf("cfg = %+v", cfg)
				}
			},
		},
		{
			name: "environment variables",
			env: map[string]string{
				"PORT": "8081", "FAIL_READINESS_AFTER_REQUESTS": "5", "CRASH_AFTER": "90",
				"MEMORY_GROW": "1G", "LOG_REQUESTS": "false", "MESSAGE": "hello",
			},
			check: func(t *testing.T, cfg config) {
				if cfg.port != 8081 || cfg.failReadinessAfterRequests != 5 || cfg.crashAfter != 90*time.Second ||
					cfg.memoryGrow != 1e9 || cfg.logRequests || cfg.message != "hello" {
					t.Errorf("cfg = %+v", cfg)
				}
			},
		},
		{
			name: "flag wins over its variable",
			args: []string{"--port", "9000"},
			env:  map[string]string{"PORT": "9001", "RESPONSE_DELAY": "1.5"},
			check: func(t *testing.T, cfg config) {
				if cfg.port != 9000 || cfg.responseDelay != 1500*time.Millisecond {
					t.Errorf("cfg = %+v", cfg)
				}
			},
		},
		{
			name: "switches list what differs from the defaults",
			args: []string{"--crash-after=10s", "--memory=2Mi"},
			check: func(t *testing.T, cfg config) {
				if got := strings.Join(cfg.switches, " "); got != "crash-after=10s memory=2Mi" {
					t.Errorf("switches = %q", got)
				}
			},
		},
		{name: "bad variable names it", env: map[string]string{"FAIL_LIVENESS_AFTER": "soon"}, wantErr: "environment variable FAIL_LIVENESS_AFTER"},
		{name: "negative duration", args: []string{"--ready-after=-1s"}, wantErr: "must not be negative"},
		{name: "bad size", args: []string{"--memory=lots"}, wantErr: "want a size"},
		{name: "negative size", env: map[string]string{"MEMORY": "-1Mi"}, wantErr: "must not be negative"},
		{name: "bad count", args: []string{"--fail-liveness-after-requests=many"}, wantErr: "whole number"},
		{name: "unknown flag", args: []string{"--explode"}, wantErr: "flag provided but not defined"},
		{name: "positional argument", args: []string{"sh", "-c", "echo hi"}, wantErr: `unexpected argument "sh"`},
		{name: "port out of range", args: []string{"--port=70000"}, wantErr: "invalid port 70000"},
		{name: "grow without interval", args: []string{"--memory-grow=1Mi", "--memory-grow-interval=0"}, wantErr: "positive --memory-grow-interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			cfg, err := parseConfig(tt.args, tt.env, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if !strings.Contains(out.String(), tt.wantErr) {
					t.Errorf("usage output %q does not explain %q", out.String(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseConfig: %v", err)
			}
			tt.check(t, cfg)
		})
	}
}

func TestParseConfigHelp(t *testing.T) {
	var out strings.Builder
	_, err := parseConfig([]string{"-h"}, nil, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(out.String(), "-fail-readiness-after-requests") {
		t.Errorf("help does not list the switches:\n%s", out.String())
	}
}

func TestEnvName(t *testing.T) {
	var cfg config
	flagSet(&cfg, io.Discard).VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		if strings.HasSuffix(name, "_PORT") || strings.Contains(name, "_SERVICE_") {
			// Kubernetes sets <SERVICE>_PORT and <SERVICE>_SERVICE_HOST for
			// every service; a switch named like them would be set by
			// accident.
			t.Errorf("switch %s reads %s, which a service's variables could set", f.Name, name)
		}
	})
	if got := envName("fail-liveness-after-requests"); got != "FAIL_LIVENESS_AFTER_REQUESTS" {
		t.Errorf("envName = %q", got)
	}
}
