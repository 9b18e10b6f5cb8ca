package gendocs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func testTree() *cobra.Command {
	root := &cobra.Command{Use: "nodecheck", Short: "root"}
	root.AddCommand(&cobra.Command{Use: "run", Short: "run the checks", Run: func(*cobra.Command, []string) {}},
		&cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}})
	return root
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	man, compl := filepath.Join(dir, "man"), filepath.Join(dir, "completions")
	if err := Write(testTree(), Options{ManDir: man, CompletionsDir: compl, Source: "nodecheck 1.2.3"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(man, "nodecheck-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.HasPrefix(page, ".nh\n.TH ") || !strings.Contains(page, `"nodecheck 1.2.3"`) || strings.Contains(page, "Auto generated") {
		t.Errorf("nodecheck-run.1: want a man page with the source line and without cobra's dated tag:\n%s", page)
	}
	if _, err := os.Stat(filepath.Join(man, "nodecheck-secret.1")); err == nil {
		t.Error("a hidden command got a man page")
	}
	for _, name := range []string{CompletionBash, CompletionZsh, CompletionFish} {
		b, err := os.ReadFile(filepath.Join(compl, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "secret") {
			t.Errorf("%s completes the hidden command", name)
		}
	}
}

func TestWriteNeedsADirectory(t *testing.T) {
	if err := Write(testTree(), Options{}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Write without directories: %v, want an error asking for one", err)
	}
}
