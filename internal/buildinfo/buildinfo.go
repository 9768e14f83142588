// Package buildinfo names the running build.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version is set at link time: -ldflags "-X github.com/collegematch/matching/internal/buildinfo.Version=v1.2.3".
var Version = "dev"

// Revision is the source revision (the git commit), set at link time like
// Version (-X ...buildinfo.Revision=<commit>). When it is empty, Info falls
// back on the revision the go command stamped into the binary, if any.
var Revision = ""

// Info returns the build's version, source revision ("unknown" when neither
// the link flags nor the go command's VCS stamp name one) and the Go version
// it was built with.
func Info() (version, revision, goVersion string) {
	revision = Revision
	if revision == "" {
		revision = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					revision = s.Value
				}
			}
		}
	}
	return Version, revision, runtime.Version()
}
