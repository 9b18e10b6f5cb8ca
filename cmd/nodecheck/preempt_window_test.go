package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nodecheck/nodecheck/cmd/nodecheck/preempt"
)

func TestPreemptWindowUsage(t *testing.T) {
	tests := []struct {
		name       string
		o          preempt.Options
		partitions []string
		want       string
	}{
		{"no partition", preempt.Options{Node: "n1", Dir: "/tmp"}, nil, "--partition is required"},
		{"no node", preempt.Options{Dir: "/tmp"}, []string{"low"}, "the partition, the node and the directory are required"},
		{"relative dir", preempt.Options{Node: "n1", Dir: "tmp"}, []string{"low"}, "must be absolute paths"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := runPreemptWindow(context.Background(), &out, &errb, tc.o, tc.partitions); code != exitCannotRun || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, errb.String(), tc.want)
			}
		})
	}
}
