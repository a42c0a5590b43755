package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	backtick = regexp.MustCompile("`([^`]+)`")
)

// testsIn lists the Test functions of a package directory (TestMain aside).
func testsIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("../..", dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "TestMain" {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// TestDocsTestTable: the table of tests in docs/ARCHITECTURE.md names only tests
// that exist, in the package its row says, and names every test of the repository.
func TestDocsTestTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n## Tests\n")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no ## Tests section")
	}
	section := doc[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	listed := map[string][]string{} // package dir -> tests
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		for _, m := range backtick.FindAllStringSubmatch(cells[2], -1) {
			listed[pkg] = append(listed[pkg], m[1])
		}
	}
	if len(listed) < 10 {
		t.Fatalf("found rows for %d packages in the table: is it still a table of | package | tests | what |?", len(listed))
	}
	for pkg, names := range listed {
		have := testsIn(t, pkg)
		if len(have) == 0 {
			t.Errorf("the table lists package %s, which has no tests (or does not exist)", pkg)
		}
		for _, n := range names {
			if !slices.Contains(have, n) {
				t.Errorf("the table lists %s in %s, which has no such test", n, pkg)
			}
		}
	}
	// Every package with tests, third_party's fork aside (upstream's own tests).
	dirs := strings.Fields(goCmd(t, "list", "-f", "{{.Dir}}", "./..."))
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		rel, _ := filepath.Rel(root, d)
		if strings.HasPrefix(rel, "third_party/gobgp") {
			continue
		}
		for _, n := range testsIn(t, rel) {
			if !slices.Contains(listed[rel], n) {
				t.Errorf("%s.%s is not in docs/ARCHITECTURE.md's table of tests", rel, n)
			}
		}
	}
}
