// Package layers holds the test that is the service's architecture: every
// package of the module has a place (a layer) and a rule (which of the
// module's packages it may import), checked on the imports the code has
// (go list), and the table in docs/architecture.md, "The layers", must say
// the same. A new package fails the test until it is given a place.
package layers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/collegematch/matching/"

// layer is a package's place. A package may import, of the module's own
// packages, only packages of its own layer or a lower one, and of those
// only the ones its rule names.
type layer int

const (
	// foundation: the service's types, the pure scoring and learning core,
	// and small leaves that do no I/O of their own.
	foundation layer = iota
	// adapter: PostgreSQL, Redis, the queue and outbound HTTP.
	adapter
	// application: the write side, the read side and the worker's handlers.
	application
	// edge: what serves HTTP (the public API, the ops port and its pages).
	edge
	// tool: operator and test tools under internal/tools; matchctl may
	// import them, the API and the worker (and all they import) never.
	tool
	// binary: cmd/*.
	binary
	// test: test support, imported by tests only.
	test
)

var layerNames = []string{foundation: "foundation", adapter: "adapter", application: "application", edge: "edge",
	tool: "tool", binary: "binary", test: "test"}

func (l layer) String() string { return layerNames[l] }

// rule is a package's layer and what it may import: module-relative package
// paths, or layer names.
type rule struct {
	layer   layer
	imports string
}

// table has one line per package of the module, sorted: "package layer:"
// and what it may import (module-relative package paths, or layer names: a
// binary may import any package of those layers). A package without a line
// fails the test, and so does a line without a package.
var table = []string{
	"api foundation:",
	"cmd/api binary: foundation adapter application edge",
	"cmd/matchctl binary: foundation adapter application edge tool",
	"cmd/worker binary: foundation adapter application edge",
	"deploy test:",
	"internal/active application: internal/domain internal/match",
	"internal/auth edge: internal/domain",
	"internal/breaker foundation:",
	"internal/buildinfo foundation:",
	"internal/cache adapter: internal/breaker internal/domain internal/handover",
	"internal/catalog foundation: internal/domain",
	"internal/catalog/bundled foundation: internal/catalog internal/domain",
	"internal/catalog/bundled/gen foundation: internal/catalog/bundled",
	"internal/command application: internal/cache internal/domain internal/handover internal/match internal/tasks",
	"internal/config foundation:",
	"internal/demo edge: api",
	"internal/domain foundation:",
	"internal/e2e test:",
	"internal/erasure application: internal/cache internal/ratelimit internal/store internal/tasks",
	"internal/handover adapter:",
	"internal/httpapi edge: internal/auth internal/command internal/config internal/domain internal/match internal/metrics internal/query internal/ratelimit",
	"internal/layers test:",
	"internal/match foundation: internal/domain",
	"internal/memlimit foundation:",
	"internal/metrics foundation: internal/buildinfo",
	"internal/ops edge:",
	"internal/periodic foundation:",
	"internal/query application: internal/active internal/cache internal/domain internal/match",
	"internal/queueconsole edge: internal/domain",
	"internal/ratelimit adapter: internal/breaker internal/config",
	"internal/store adapter: internal/domain migrations",
	"internal/tasks application: internal/domain internal/handover internal/match internal/periodic",
	"internal/testutil test: internal/metrics internal/store migrations",
	"internal/testutil/benchcpu test:",
	"internal/tools/drill tool: internal/tools/faultproxy internal/webhook",
	"internal/tools/faultproxy tool:",
	"internal/tools/inspect tool: internal/active internal/cache internal/match internal/query internal/store",
	"internal/tools/loadtest tool: internal/cache internal/store internal/tasks",
	"internal/tools/scaleout tool:",
	"internal/tools/scaleout/rrproxy tool: internal/tools/scaleout",
	"internal/tools/simulate tool: internal/catalog internal/domain internal/match",
	"internal/tools/simulate/live tool: internal/domain internal/match internal/tools/simulate",
	"internal/webhook application: internal/buildinfo internal/domain internal/handover internal/periodic internal/tasks",
	"migrations foundation:",
}

// rules is the table by package.
var rules = parseTable(table)

// servers are the binaries that run as the service; what they import,
// directly or not, holds no tool and no test support.
var servers = []string{"cmd/api", "cmd/worker"}

// noClients are packages that reach PostgreSQL, Redis and the queue only
// through the interfaces they declare (the pure core does no I/O at all):
// none of these imports may appear among their direct imports.
var noClients = map[string][]string{
	"internal/domain":  {"os", "net", "net/http", "github.com/jackc/", "github.com/redis/", "github.com/hibiken/"},
	"internal/match":   {"os", "net", "net/http", "github.com/jackc/", "github.com/redis/", "github.com/hibiken/"},
	"internal/active":  {"github.com/jackc/", "github.com/redis/", "github.com/hibiken/"},
	"internal/command": {"github.com/jackc/", "github.com/redis/", "github.com/hibiken/"},
	"internal/query":   {"github.com/jackc/", "github.com/redis/", "github.com/hibiken/"},
	"internal/httpapi": {"github.com/jackc/", "github.com/redis/", "github.com/hibiken/"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func parseTable(lines []string) map[string]rule {
	rules := make(map[string]rule, len(lines))
	for _, line := range lines {
		head, imports, ok := strings.Cut(line, ":")
		name, layerName, ok2 := strings.Cut(head, " ")
		l, ok3 := layerNamed(layerName)
		if !ok || !ok2 || !ok3 {
			panic(fmt.Sprintf("layers: a line of the table is not \"package layer: imports\": %q", line))
		}
		rules[name] = rule{layer: l, imports: strings.TrimSpace(imports)}
	}
	return rules
}

func TestTableIsSorted(t *testing.T) {
	for i := 1; i < len(table); i++ {
		prev, _, _ := strings.Cut(table[i-1], " ")
		name, _, _ := strings.Cut(table[i], " ")
		if prev >= name {
			t.Errorf("table: %q comes after %q: keep one line per package, sorted", name, prev)
		}
	}
}

func TestEveryPackageHasAPlace(t *testing.T) {
	pkgs := listPackages(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		seen[name] = true
		if _, ok := rules[name]; !ok {
			t.Errorf("%s has no rule: give it a layer and what it may import in rules (layers_test.go) and in docs/architecture.md, \"The layers\"", name)
		}
	}
	for name := range rules {
		if !seen[name] {
			t.Errorf("rules has a line for %s, which is no package of the module: remove it (and its row in docs/architecture.md)", name)
		}
	}
}

func TestImportDirections(t *testing.T) {
	for _, p := range listPackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		r, ok := rules[name]
		if !ok {
			continue // TestEveryPackageHasAPlace says so
		}
		for _, imp := range p.Imports {
			dep, own := strings.CutPrefix(imp, module)
			if !own {
				continue
			}
			if !r.allows(dep) {
				t.Errorf("%s (%s) imports %s, which its rule does not allow: it may import %s", name, r.layer, dep, r.describe())
			}
		}
	}
}

// TestRulesPointDown checks the table itself: a rule names only packages of
// its own layer or a lower one, and a binary only layers below its own.
func TestRulesPointDown(t *testing.T) {
	for name, r := range rules {
		for _, dep := range strings.Fields(r.imports) {
			if l, isLayer := layerNamed(dep); isLayer {
				if l >= r.layer {
					t.Errorf("%s (%s) may import the %s layer, which is not below it", name, r.layer, l)
				}
				continue
			}
			d, ok := rules[dep]
			switch {
			case !ok:
				t.Errorf("%s may import %s, which has no rule", name, dep)
			case d.layer > r.layer:
				t.Errorf("%s (%s) may import %s (%s), a higher layer", name, r.layer, dep, d.layer)
			}
		}
	}
}

// TestServersImportNoTool walks everything cmd/api and cmd/worker import,
// directly or not: no tool, no test support, not the testing package.
func TestServersImportNoTool(t *testing.T) {
	byName := map[string]pkg{}
	for _, p := range listPackages(t) {
		byName[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	for _, server := range servers {
		p, ok := byName[server]
		if !ok {
			t.Fatalf("no package %s", server)
		}
		for _, dep := range p.Deps {
			if dep == "testing" {
				t.Errorf("%s imports the testing package (through its imports)", server)
			}
			name, own := strings.CutPrefix(dep, module)
			if !own {
				continue
			}
			if r := rules[name]; r.layer == tool || r.layer == test {
				t.Errorf("%s imports %s (%s), directly or through its imports", server, name, r.layer)
			}
		}
	}
}

// TestOnlyTestsImportTestSupport: no production code imports a package of
// the test layer or the testing package, directly or not.
func TestOnlyTestsImportTestSupport(t *testing.T) {
	for _, p := range listPackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		if rules[name].layer == test {
			continue
		}
		for _, dep := range p.Deps {
			if dep == "testing" {
				t.Errorf("%s imports the testing package (through its imports)", name)
			}
			if d, own := strings.CutPrefix(dep, module); own && rules[d].layer == test {
				t.Errorf("%s imports %s, which is for tests only", name, d)
			}
		}
	}
}

func TestNoClientsWhereInterfacesBelong(t *testing.T) {
	for _, p := range listPackages(t) {
		name := strings.TrimPrefix(p.ImportPath, module)
		banned, ok := noClients[name]
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			for _, b := range banned {
				if imp == b || (strings.HasSuffix(b, "/") && strings.HasPrefix(imp, b)) {
					t.Errorf("%s imports %s: the pure core does no I/O, and the read and write sides and the HTTP layer reach the stores through interfaces (docs/architecture.md, \"The layers\")", name, imp)
				}
			}
		}
	}
}

// TestDocsMirrorRules: docs/architecture.md, "The layers", has one row per
// rule with the same layer and the same imports.
func TestDocsMirrorRules(t *testing.T) {
	rows, err := docRows("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range rules {
		row, ok := rows[name]
		if !ok {
			t.Errorf("docs/architecture.md, \"The layers\": no row for %s (%s, may import %s)", name, r.layer, r.describe())
			continue
		}
		if row.layer != r.layer.String() {
			t.Errorf("docs/architecture.md puts %s in the %s layer, the rules in %s", name, row.layer, r.layer)
		}
		want := strings.Fields(r.imports)
		slices.Sort(want)
		if !slices.Equal(row.imports, want) {
			t.Errorf("docs/architecture.md says %s may import %v, the rules %v", name, row.imports, want)
		}
	}
	for name := range rows {
		if _, ok := rules[name]; !ok {
			t.Errorf("docs/architecture.md has a row for %s, which has no rule", name)
		}
	}
}

func (r rule) allows(dep string) bool {
	for _, a := range strings.Fields(r.imports) {
		if l, isLayer := layerNamed(a); isLayer {
			if d, ok := rules[dep]; ok && d.layer == l {
				return true
			}
		} else if a == dep {
			return true
		}
	}
	return false
}

func (r rule) describe() string {
	if r.imports == "" {
		return "none of the module's packages"
	}
	return "[" + r.imports + "]"
}

func layerNamed(s string) (layer, bool) {
	i := slices.Index(layerNames, s)
	return layer(i), i >= 0
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
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
	return pkgs
}

type docRow struct {
	layer   string
	imports []string
}

// docRows reads the table of "## The layers": | `package` | layer | may
// import | what it is |, where "may import" is "nothing" or backquoted
// names: a layer's name, a path under internal/ without that prefix, or a
// module-relative path (`cmd/...`, `api`, `migrations`).
func docRows(path string) (map[string]docRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows := map[string]docRow{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## The layers"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			return nil, fmt.Errorf("%s: a row of the layers' table with too few cells: %s", path, line)
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		row := docRow{layer: strings.Trim(strings.TrimSpace(cells[2]), "`"), imports: []string{}}
		for _, tok := range backquoted(cells[3]) {
			row.imports = append(row.imports, fullName(tok))
		}
		slices.Sort(row.imports)
		rows[name] = row
	}
	return rows, sc.Err()
}

func backquoted(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "`")
		if i < 0 {
			return out
		}
		j := strings.Index(s[i+1:], "`")
		if j < 0 {
			return out
		}
		out = append(out, s[i+1:i+1+j])
		s = s[i+1+j+1:]
	}
}

func fullName(tok string) string {
	if _, isLayer := layerNamed(tok); isLayer {
		return tok
	}
	if _, ok := rules["internal/"+tok]; ok {
		return "internal/" + tok
	}
	return tok
}
