// Package buildinfo names the running build.
package buildinfo

// Version is set at link time: -ldflags "-X github.com/collegematch/matching/internal/buildinfo.Version=v1.2.3".
var Version = "dev"
