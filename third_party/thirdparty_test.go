// Package thirdparty holds no code: its test proves that each fork under
// third_party/ is its upstream release plus the patches listed in README.md, no
// more, and that each patch's own test fails without the patch and passes with it.
package thirdparty

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fibfleet/fibfleet/internal/testutil"
)

// A fork: an upstream module version, the parts of it kept (the rest, docs and
// scenario tests in Python, is left out), and its patches, applied in name order.
type fork struct {
	dir, module, version, patches string
	keep                          []string
}

var forks = []fork{{
	dir: "gobgp", module: "github.com/osrg/gobgp/v4", version: "v4.8.0", patches: "patches/gobgp",
	keep: []string{"LICENSE", "README.md", "go.mod", "go.sum", "api", "cmd", "internal", "pkg", "proto"},
}}

func TestForksAreUpstreamPlusPatches(t *testing.T) {
	testutil.Need(t, testutil.Have("git"), "needs git to apply the patches")
	for _, f := range forks {
		t.Run(f.dir, func(t *testing.T) {
			patches, err := filepath.Glob(filepath.Join(f.patches, "*.patch"))
			if err != nil || len(patches) == 0 {
				t.Fatalf("no patches in %s: a fork without patches should be the upstream module itself", f.patches)
			}
			slices.Sort(patches)
			upstream := download(t, f.module, f.version)
			work := t.TempDir()
			copyKept(t, upstream, work, f.keep)
			for _, p := range patches {
				tests := patchTests(t, p)
				abs, _ := filepath.Abs(p)
				// The patch's tests alone, on upstream and the patches before it: they
				// must fail, or they do not test what the patch changes.
				git(t, work, "apply", "--include=*_test.go", abs)
				if out, err := goTest(work, tests); err == nil {
					t.Errorf("%s: its tests %v pass without the patch: they do not test it\n%s", filepath.Base(p), tests, out)
				}
				git(t, work, "apply", "-R", "--include=*_test.go", abs)
				git(t, work, "apply", abs)
				t.Logf("%s (tests %v)", filepath.Base(p), tests)
			}
			if diff := compareTrees(t, work, f.dir); len(diff) > 0 {
				t.Fatalf("third_party/%s is not %s@%s plus its patches; differing files:\n%s\n(make the change a patch in %s, listed in README.md)",
					f.dir, f.module, f.version, strings.Join(diff, "\n"), f.patches)
			}
			var all []string
			for _, p := range patches {
				all = append(all, patchTests(t, p)...)
			}
			if out, err := goTest(f.dir, all); err != nil {
				t.Fatalf("the patches' tests fail in third_party/%s: %v\n%s", f.dir, err, out)
			}
		})
	}
}

// TestPatchesDescribed: every patch says what it is (Subject), whether it went
// upstream (Forwarded, DEP-3), which tests prove it, and is listed in README.md.
// It needs neither git nor the network.
func TestPatchesDescribed(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range forks {
		patches, err := filepath.Glob(filepath.Join(f.patches, "*.patch"))
		if err != nil || len(patches) == 0 {
			t.Fatalf("no patches in %s", f.patches)
		}
		for _, p := range patches {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			head, _, _ := bytes.Cut(b, []byte("\ndiff --git "))
			for _, field := range []string{"Subject", "Forwarded"} {
				if !regexp.MustCompile(`(?m)^` + field + `: \S`).Match(head) {
					t.Errorf("%s has no %s: line in its description (README.md, \"Adding a patch\")", p, field)
				}
			}
			patchTests(t, p)
			if !bytes.Contains(readme, []byte("`"+filepath.Base(p)+"`")) {
				t.Errorf("%s is not listed in README.md's table", filepath.Base(p))
			}
		}
	}
}

// patchTests reads the "Test: TestName (package dir)" lines of a patch's description.
func patchTests(t *testing.T, patch string) []string {
	b, err := os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := bytes.Cut(b, []byte("\ndiff --git "))
	var tests []string
	for _, m := range regexp.MustCompile(`(?m)^Test: (Test\w+) \(([\w/]+)\)`).FindAllSubmatch(head, -1) {
		tests = append(tests, string(m[1])+"@"+string(m[2]))
	}
	if len(tests) == 0 {
		t.Fatalf("%s names no test: add a line \"Test: TestName (package dir)\" to its description", patch)
	}
	return tests
}

// goTest runs tests given as name@dir in the module at dir.
func goTest(dir string, tests []string) ([]byte, error) {
	byPkg := map[string][]string{}
	for _, tc := range tests {
		name, pkg, _ := strings.Cut(tc, "@")
		byPkg[pkg] = append(byPkg[pkg], name)
	}
	var out []byte
	for pkg, names := range byPkg {
		cmd := exec.Command("go", "test", "-count=1", "-run", "^("+strings.Join(names, "|")+")$", "./"+pkg)
		cmd.Dir = dir
		// Keep the caller's flags: with -trimpath (make test) the upstream copy and the
		// fork share the compiled packages they do not patch.
		// CGO_ENABLED=0 as fibfleet is built, wherever this runs: a patch's test
		// that builds only with cgo would prove nothing in make test.
		cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
		b, err := cmd.CombinedOutput()
		out = append(out, b...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func download(t *testing.T, module, version string) string {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v", module, version, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s@%s: no directory in %s", module, version, out)
	}
	return m.Dir
}

func copyKept(t *testing.T, from, to string, keep []string) {
	for _, k := range keep {
		err := filepath.WalkDir(filepath.Join(from, k), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(from, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dst := filepath.Join(to, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// compareTrees lists the files that differ between two trees, or exist in one only.
func compareTrees(t *testing.T, a, b string) []string {
	files := func(root string) map[string][]byte {
		m := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			m[rel], err = os.ReadFile(p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	fa, fb := files(a), files(b)
	var diff []string
	for p, ba := range fa {
		if bb, ok := fb[p]; !ok {
			diff = append(diff, p+" (missing from the fork)")
		} else if !bytes.Equal(ba, bb) {
			diff = append(diff, p)
		}
	}
	for p := range fb {
		if _, ok := fa[p]; !ok {
			diff = append(diff, p+" (only in the fork)")
		}
	}
	slices.Sort(diff)
	return diff
}
