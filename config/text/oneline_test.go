package text

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOneLine(t *testing.T) {
	tests := []struct {
		name, in string
		limit    int
		want     string
	}{
		{"plain", "mlx5_5/1: state DOWN", 0, "mlx5_5/1: state DOWN"},
		{"blanks collapse and trim", "\n\n\tFabric  Manager\n", 80, "Fabric Manager"},
		{"controls are garbage", "a\x7fb\x00c\x1b[31md\x18", 0, "a?b?c?[31md?"},
		{"Unicode white space is a blank", "a\u0085b\u00a0c\u2028d", 0, "a b c d"},
		{"non-ASCII", "ab\u00e9c", 0, "ab?c"},
		{"a run of invalid bytes is one", "a\xff\xfeb\xff", 0, "a?b?"},
		{"invalid then a non-ASCII letter", "a\xff\u00e9b", 0, "a??b"},
		{"found by fuzzing fabric_manager", "0\xa0000\x18000\xbf\xfe\x850", 0, "0?000?000?0"},
		{"quotes stay", `x="y" 'z'`, 0, `x="y" 'z'`},
		{"cut with ellipsis", "abcdefghij", 4, "abcd..."},
		{"fits exactly", "abcdefgh", 8, "abcdefgh"},
		{"collapsed blanks fit", "ab      \n\n   cd", 5, "ab cd"},
		{"empty", "", 5, ""},
		{"only blanks", " \t\n", 5, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OneLine(tc.in, tc.limit); got != tc.want {
				t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
			}
		})
	}
}

// FuzzOneLine: whatever comes in, out comes one line of printable ASCII within the limit,
// (plus the "..." of a cut), with no blank at either end and no two blanks together.
func FuzzOneLine(f *testing.F) {
	f.Add("\x1b[31mred\x1b[0m\r\n", 10)
	f.Add("ab\u00e9c\x18d\xff", 0)
	f.Add(strings.Repeat("0123456789 ", 30), 200)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		got := OneLine(s, limit)
		if limit > 0 && len(got) > limit+3 {
			t.Fatalf("OneLine(%q, %d) = %q: %d bytes", s, limit, got, len(got))
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x20 || c > 0x7e {
				t.Fatalf("OneLine(%q, %d) = %q: byte %#x", s, limit, got, c)
			}
		}
		if strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || strings.Contains(got, "  ") {
			t.Fatalf("OneLine(%q, %d) = %q: stray blanks", s, limit, got)
		}
		if limit <= 0 && OneLine(got, 0) != got {
			t.Fatalf("OneLine(%q, %d) = %q is not stable", s, limit, got)
		}
	})
}

func TestEscapeLine(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain and UTF-8 kept", "clé = 1", "clé = 1"},
		{"newline and tab", "a\nb\tc", `a\nb\tc`},
		{"escape and C1", "\x1b[0m\u0085", `\x1b[0m\u0085`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EscapeLine(tc.in); got != tc.want {
				t.Errorf("EscapeLine(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func FuzzEscapeLine(f *testing.F) {
	f.Add("a\nb\xff\u0085")
	f.Fuzz(func(t *testing.T, s string) {
		got := EscapeLine(s)
		if strings.ContainsAny(got, "\n\r") || !utf8.ValidString(got) {
			t.Fatalf("EscapeLine(%q) = %q: not one valid line", s, got)
		}
	})
}

func ExampleOneLine() {
	fmt.Println(OneLine("nvidia-smi: \x1b[31mGPU is lost\x1b[0m\n\ttry a reset", 28))
	// Output: nvidia-smi: ?[31mGPU is lost...
}

func ExampleEscapeLine() {
	fmt.Println(EscapeLine("Gres=gpu:h100:8\tCPUs=\xff"))
	// Output: Gres=gpu:h100:8\tCPUs=\xff
}
