// Package memlimit gives the Go runtime a soft memory limit when the
// operator has not: a fraction of the container's memory limit, read from
// its cgroup. With a soft limit the garbage collector works harder as the
// heap nears the container's limit instead of letting the kernel kill the
// process (out of memory) at the first burst of large requests.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction is the share of the container's memory limit the Go runtime is
// held to. The rest is headroom for what the runtime does not count (the
// binary's text, kernel buffers of sockets and page cache charged to the
// cgroup) and for the collector to catch up with a burst.
const Fraction = 0.9

// unlimited is the cgroup v1 figure at or above which there is no limit
// (the kernel reports 2^63 rounded down to a page).
const unlimited = 1 << 60

// Source says where a process's cgroup files are; Default is the real one.
type Source struct {
	// Root is where the cgroup file systems are mounted (/sys/fs/cgroup).
	Root string
	// Self is the process's cgroup membership (/proc/self/cgroup).
	Self string
}

// Default reads the running process's cgroups.
var Default = Source{Root: "/sys/fs/cgroup", Self: "/proc/self/cgroup"}

// Result is what Apply did.
type Result struct {
	// Limit is the soft memory limit in force, in bytes; 0 when Apply set
	// none (math.MaxInt64 is the runtime's "no limit").
	Limit int64
	// From says where it came from: "GOMEMLIMIT", "cgroup" or "none".
	From string
	// Container is the container's memory limit read from the cgroup, 0
	// when there is none.
	Container int64
}

// Apply sets the runtime's soft memory limit to Fraction of the cgroup's
// memory limit, unless goMemLimitSet (the runtime has applied GOMEMLIMIT
// already) or the cgroup has no limit. Failing to read the cgroup is not
// an error of the caller's: the runtime is left as it is and err says why.
func Apply(goMemLimitSet bool, src Source) (Result, error) {
	if goMemLimitSet {
		return Result{Limit: debug.SetMemoryLimit(-1), From: "GOMEMLIMIT"}, nil
	}
	container, err := src.Limit()
	if err != nil || container == 0 {
		return Result{From: "none"}, err
	}
	limit := int64(float64(container) * Fraction)
	debug.SetMemoryLimit(limit)
	return Result{Limit: limit, From: "cgroup", Container: container}, nil
}

// Limit returns the tightest memory limit of the process's cgroup and its
// ancestors, cgroup v2 (memory.max) or v1 (memory.limit_in_bytes); 0 when
// none is set.
func (src Source) Limit() (int64, error) {
	self, err := os.ReadFile(src.Self)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // not Linux, or no cgroups
	}
	if err != nil {
		return 0, err
	}
	var best int64
	consider := func(v int64) {
		if v > 0 && (best == 0 || v < best) {
			best = v
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		controllers, dir := parts[1], parts[2]
		switch {
		case parts[0] == "0" && controllers == "": // cgroup v2
			for _, mount := range []string{src.Root, path.Join(src.Root, "unified")} {
				v, err := walkUp(mount, dir, "memory.max")
				if err != nil {
					return 0, err
				}
				consider(v)
			}
		case hasController(controllers, "memory"): // cgroup v1
			v, err := walkUp(path.Join(src.Root, "memory"), dir, "memory.limit_in_bytes")
			if err != nil {
				return 0, err
			}
			consider(v)
		}
	}
	return best, sc.Err()
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// walkUp reads file in dir under mount and in each of dir's ancestors (a
// limit on a parent binds its children; a container's own cgroup is often
// the mount's root), and returns the smallest limit found, 0 for none.
func walkUp(mount, dir, file string) (int64, error) {
	var best int64
	dir = path.Clean("/" + dir)
	for {
		v, err := readLimit(path.Join(mount, dir, file))
		if err != nil {
			return 0, err
		}
		if v > 0 && (best == 0 || v < best) {
			best = v
		}
		if dir == "/" {
			return best, nil
		}
		dir = path.Dir(dir)
	}
}

// readLimit reads one limit file: a number of bytes, or "max" (v2) or a
// figure of 2^60 and more (v1) for none; a missing file is none.
func readLimit(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" || s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, errors.New(file + ": not a memory limit: " + strconv.Quote(s))
	}
	if v >= unlimited || v > math.MaxInt64 {
		return 0, nil
	}
	return int64(v), nil
}
