// Package layers holds the test that keeps the service's packages in their
// layers: the import directions of docs/architecture.md, checked on the
// imports the code has (go list), so a change that breaks one fails here.
package layers

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/collegematch/matching/"

// rules are the import directions: a package may import, of the service's
// own packages, only those listed (tests aside).
var rules = map[string][]string{
	"internal/domain":   {},
	"internal/match":    {"internal/domain"},
	"internal/store":    {"internal/domain", "migrations"},
	"internal/handover": {},
	// The active catalogue in memory: loaded through an interface the store
	// satisfies.
	"internal/active":  {"internal/domain", "internal/match"},
	"internal/breaker": {},
	"internal/cache":   {"internal/breaker", "internal/domain", "internal/handover"},
	// The write side: use cases over the read models' types and the task
	// contract, never the read side or a database client.
	"internal/command": {"internal/cache", "internal/domain", "internal/handover", "internal/match", "internal/tasks"},
	// The read side: never the write side or a database client.
	"internal/query": {"internal/active", "internal/cache", "internal/domain", "internal/match"},
	"internal/tasks": {"internal/domain", "internal/handover", "internal/match", "internal/periodic"},
	// Webhook delivery: queues and handles its tasks under the task
	// contract, which knows nothing of it.
	"internal/webhook": {"internal/buildinfo", "internal/domain", "internal/handover", "internal/periodic", "internal/tasks"},
	// Periodic jobs under a lease: the lease is an interface the leader
	// lock satisfies.
	"internal/periodic": {},
}

// adapters are the packages only binaries (and tests) wire in.
var adapters = []string{"internal/store", "internal/cache", "internal/handover"}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportDirections(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", module+"...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(out)
	var pkgs []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		allowed, ruled := rules[name]
		for _, imp := range p.Imports {
			dep, own := strings.CutPrefix(imp, module)
			if !own {
				continue
			}
			if ruled && !slices.Contains(allowed, dep) {
				t.Errorf("%s imports %s: it may import only %v", name, dep, allowed)
			}
			if slices.Contains(adapters, dep) && !strings.HasPrefix(name, "cmd/") && !ruled &&
				name != "internal/testutil" && name != "internal/loadtest" && name != "internal/inspect" && name != "internal/erasure" {
				t.Errorf("%s imports the adapter %s: only binaries wire adapters in", name, dep)
			}
		}
	}
}
