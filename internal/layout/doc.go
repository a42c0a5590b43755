// Package layout holds the tests that keep the repository's shape: what each binary
// links (product binaries carry product code only) and that the docs name only what
// exists. It has no code of its own.
package layout
