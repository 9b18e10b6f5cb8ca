package text

import (
	"fmt"
	"testing"
)

func TestPlural(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{{0, "files"}, {1, "file"}, {2, "files"}, {-1, "files"}}
	for _, tc := range tests {
		if got := Plural(tc.n, "file", "files"); got != tc.want {
			t.Errorf("Plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func ExamplePlural() {
	for _, n := range []int{1, 3} {
		fmt.Printf("%d %s: remove %s\n", n, Plural(n, "file", "files"), Plural(n, "it", "them"))
	}
	// Output:
	// 1 file: remove it
	// 3 files: remove them
}
