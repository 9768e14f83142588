// Command gen builds the bundled school catalogue (internal/catalog/bundled)
// from the public College Scorecard and IPEDS files: `make catalogue`, or
//
//	go run ./internal/catalog/bundled/gen [-data ../shared/data] [-out internal/catalog/bundled/schools.csv.gz] [-check]
//
// It reads the files of bundled.Steps from -data, refuses files whose
// SHA-256 is not the documented one (unless -any-input), merges them as
// `matchctl import-scorecard` would, and writes the compact file. With
// -check it writes nothing and fails when the committed file differs from
// what the inputs give.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/collegematch/matching/internal/catalog/bundled"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	data := fs.String("data", "../shared/data", "directory holding the source files")
	out := fs.String("out", "internal/catalog/bundled/"+bundled.File, "compact file to write")
	check := fs.Bool("check", false, "compare with -out instead of writing it")
	anyInput := fs.Bool("any-input", false, "accept source files whose SHA-256 differs from the documented one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	schools, reports, err := bundled.Build(*data, !*anyInput)
	if errors.Is(err, bundled.ErrInputChanged) {
		return fmt.Errorf("%w\n(update Steps and README.md in internal/catalog/bundled for new files, or pass -any-input)", err)
	}
	if err != nil {
		return err
	}
	for i, r := range reports {
		fmt.Fprintf(stdout, "%d. %s: %d rows read, %d added, %d merged, %d not in the catalogue, %d skipped, %d values dropped, %d closed\n",
			i+1, r.File, r.Read.Read, r.Added, r.Merged, r.NotLoaded, r.Read.SkippedTotal(), r.Read.DroppedTotal(), r.Closed)
	}
	var buf bytes.Buffer
	if err := bundled.Encode(&buf, schools); err != nil {
		return err
	}
	if *check {
		old, err := os.ReadFile(*out)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, buf.Bytes()) {
			return fmt.Errorf("%s is not what the inputs give (%d bytes, want %d); run make catalogue", *out, len(old), buf.Len())
		}
		fmt.Fprintf(stdout, "%s is up to date: %d schools, %d bytes\n", *out, len(schools), buf.Len())
		return nil
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d schools, %d bytes\n", *out, len(schools), buf.Len())
	return nil
}
