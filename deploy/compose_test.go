package deploy

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/testutil"
)

// composeFile is the part of the Compose specification docker-compose.yml
// uses; any other key is refused, so a misspelt one fails here instead of
// being dropped. Top-level x-* keys hold the file's YAML anchors.
type composeFile struct {
	Name       string                    `yaml:"name"`
	Services   map[string]composeService `yaml:"services"`
	Volumes    map[string]any            `yaml:"volumes"`
	Configs    map[string]composeConfig  `yaml:"configs"`
	Extensions map[string]any            `yaml:",inline"`
}

type composeConfig struct {
	Content string `yaml:"content"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context string            `yaml:"context"`
		Args    map[string]string `yaml:"args"`
	} `yaml:"build"`
	Profiles    []string          `yaml:"profiles"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Configs     []struct {
		Source string `yaml:"source"`
		Target string `yaml:"target"`
	} `yaml:"configs"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Deploy *struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
	Restart string `yaml:"restart"`
}

// The two stacks of docker-compose.yml: the default one (`make up`) and the
// profile scaleout (`make up-scaleout`).
var (
	defaultStack  = []string{"postgres", "redis", "migrate", "seed", "api", "worker"}
	scaleoutStack = []string{"redis-node-1", "redis-node-2", "redis-node-3", "redis-cluster-init", "pgbouncer",
		"migrate-scaleout", "seed-scaleout", "api-scaleout", "worker-scaleout"}
)

func decodeCompose(b []byte) (composeFile, error) {
	var f composeFile
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	err := d.Decode(&f)
	return f, err
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "docker-compose.yml"))
	require.NoError(t, err)
	f, err := decodeCompose(b)
	require.NoError(t, err, "docker-compose.yml")
	return f
}

// interpolation is what docker compose substitutes: $$, ${NAME},
// ${NAME:-default} and ${NAME-default}.
var interpolation = regexp.MustCompile(`\$\$|\$\{[A-Z_][A-Z0-9_]*(:?-([^}]*))?\}`)

// interpolate gives s as docker compose reads it with none of the variables
// set.
func interpolate(s string) string {
	return interpolation.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		return interpolation.FindStringSubmatch(m)[2]
	})
}

// app says whether a service runs one of the service's binaries (its image
// is built from this repository).
func (s composeService) app() bool { return s.Build != nil }

// binary is the base name of the command a service runs.
func (s composeService) binary() string {
	if len(s.Command) == 0 {
		return ""
	}
	return filepath.Base(s.Command[0])
}

func (s composeService) runs(binary string, args ...string) bool {
	return s.app() && len(s.Command) > len(args) && s.binary() == binary && slices.Equal(s.Command[1:1+len(args)], args)
}

// databaseURL is the PostgreSQL URL the service connects to: matchctl
// migrate's MIGRATE_DATABASE_URL (when set), DATABASE_URL otherwise.
func (s composeService) databaseURL(t *testing.T) *url.URL {
	t.Helper()
	v := s.Environment["DATABASE_URL"]
	if m := s.Environment["MIGRATE_DATABASE_URL"]; m != "" && s.runs("matchctl", "migrate") {
		v = m
	}
	u, err := url.Parse(interpolate(v))
	require.NoError(t, err)
	return u
}

// redisNodes are the host:port pairs REDIS_URL names, in order.
func (s composeService) redisNodes(t *testing.T) []string {
	t.Helper()
	u, err := url.Parse(interpolate(s.Environment["REDIS_URL"]))
	require.NoError(t, err)
	return append([]string{u.Host}, u.Query()["addr"]...)
}

func TestComposeDecodesStrictly(t *testing.T) {
	f := loadCompose(t)
	for k := range f.Extensions {
		assert.True(t, strings.HasPrefix(k, "x-"), "docker-compose.yml: top-level key %q", k)
	}
	var defaults, scaleout []string
	for name, s := range f.Services {
		switch {
		case len(s.Profiles) == 0:
			defaults = append(defaults, name)
		case slices.Equal(s.Profiles, []string{"scaleout"}):
			scaleout = append(scaleout, name)
		default:
			t.Errorf("service %s: profiles %v", name, s.Profiles)
		}
	}
	assert.ElementsMatch(t, defaultStack, defaults, "the default stack (make up)")
	assert.ElementsMatch(t, scaleoutStack, scaleout, "the scaleout profile (make up-scaleout)")

	// A misspelt key is refused, and the anchors' merge keys are followed.
	_, err := decodeCompose([]byte("services:\n  api:\n    imag: x\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "field imag not found")
	g, err := decodeCompose([]byte("x-e: &e\n  A: a\n  B: b\nservices:\n  api:\n    environment:\n      <<: *e\n      B: c\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"A": "a", "B": "c"}, g.Services["api"].Environment)
}

// Every published port is on loopback.
func TestComposePortsOnLoopback(t *testing.T) {
	f := loadCompose(t)
	n := 0
	for name, s := range f.Services {
		for _, p := range s.Ports {
			n++
			parts := strings.Split(interpolate(p), ":")
			if assert.Len(t, parts, 3, "service %s port %q: host address, host port, container port", name, p) {
				assert.Equal(t, "127.0.0.1", parts[0], "service %s publishes %q beyond loopback", name, p)
			}
		}
	}
	assert.Greater(t, n, 5)
}

// Every variable set on a process of the service is one it reads.
func TestComposeEnvironmentVariablesAreRead(t *testing.T) {
	f := loadCompose(t)
	known := slices.Concat(config.Variables, runtimeVariables)
	checked := map[string]bool{}
	for name, s := range f.Services {
		if !s.app() {
			continue
		}
		checked[s.binary()] = true
		for k := range s.Environment {
			assert.Contains(t, known, k, "service %s sets %s, which no binary reads", name, k)
		}
	}
	assert.Equal(t, map[string]bool{"api": true, "worker": true, "matchctl": true}, checked)
}

// waitsFor says whether service name is started only once dep is in state
// condition, through its depends_on and theirs (each of which waits for a
// condition: a one-shot that completed had what it depended on).
func (f composeFile) waitsFor(name, dep, condition string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(n string) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		for d, c := range f.Services[n].DependsOn {
			if (d == dep && c.Condition == condition) || walk(d) {
				return true
			}
		}
		return false
	}
	return walk(name)
}

// Each service starts once what it needs is there: the database it names
// answering (and migrated, for the API and worker, and seeded for the API),
// each Redis it names answering, a cluster created.
func TestComposeDependencies(t *testing.T) {
	f := loadCompose(t)
	for name, s := range f.Services {
		for dep, c := range s.DependsOn {
			d, ok := f.Services[dep]
			if !assert.True(t, ok, "service %s depends on %s, which is not defined", name, dep) {
				continue
			}
			switch c.Condition {
			case "service_healthy":
				assert.NotNil(t, d.Healthcheck, "service %s waits for %s to be healthy, which has no healthcheck", name, dep)
			case "service_completed_successfully":
				assert.Equal(t, "no", d.Restart, "service %s waits for %s to complete: a one-shot", name, dep)
			default:
				t.Errorf("service %s depends on %s with condition %q: wait for healthy or completed", name, dep, c.Condition)
			}
			// The profile shares the default stack's PostgreSQL, nothing else.
			if dep != "postgres" {
				assert.Equal(t, s.Profiles, d.Profiles, "service %s depends on %s, of another stack", name, dep)
			}
		}
	}
	for name, s := range f.Services {
		if !s.app() {
			continue
		}
		db := s.databaseURL(t).Hostname()
		require.Contains(t, f.Services, db, "service %s connects to PostgreSQL at %s", name, db)
		assert.True(t, f.waitsFor(name, db, "service_healthy"), "service %s starts before %s is healthy", name, db)
		if s.binary() != "api" && s.binary() != "worker" {
			continue
		}
		// The migrations of the same stack, and for the API the catalogue.
		migrated, seeded := false, false
		for n, o := range f.Services {
			if slices.Equal(o.Profiles, s.Profiles) {
				migrated = migrated || (o.runs("matchctl", "migrate") && f.waitsFor(name, n, "service_completed_successfully"))
				seeded = seeded || (o.runs("matchctl", "seed") && f.waitsFor(name, n, "service_completed_successfully"))
			}
		}
		assert.True(t, migrated, "service %s starts before the migrations ran", name)
		if s.binary() == "api" {
			assert.True(t, seeded, "service %s starts before the catalogue is seeded", name)
		}
		nodes := s.redisNodes(t)
		for _, node := range nodes {
			host, _, _ := strings.Cut(node, ":")
			require.Contains(t, f.Services, host, "service %s names Redis at %s", name, node)
			assert.True(t, f.waitsFor(name, host, "service_healthy"), "service %s starts before Redis %s is healthy", name, host)
		}
		if len(nodes) > 1 {
			assert.True(t, f.waitsFor(name, "redis-cluster-init", "service_completed_successfully"),
				"service %s starts before the cluster is created", name)
		}
	}
}

// The scaleout profile: a Redis Cluster of three masters, PgBouncer in
// transaction pooling mode, the API and two workers through both
// (docs/topologies.md).
func TestComposeScaleout(t *testing.T) {
	f := loadCompose(t)
	svc := func(name string) composeService {
		t.Helper()
		s, ok := f.Services[name]
		require.True(t, ok, "service %s", name)
		return s
	}

	// Three cluster-enabled nodes, each announcing its service name.
	var nodes []string
	for name, s := range f.Services {
		if !slices.Contains(s.Command, "--cluster-enabled") {
			continue
		}
		nodes = append(nodes, name+":6379")
		assert.True(t, strings.HasPrefix(s.Image, "redis:7"), "service %s: image %s", name, s.Image)
		assert.Equal(t, "redis-server", s.binary(), name)
		flags := map[string]string{}
		for i := 1; i+1 < len(s.Command); i += 2 {
			flags[s.Command[i]] = s.Command[i+1]
		}
		assert.Equal(t, map[string]string{
			"--cluster-enabled": "yes", "--cluster-config-file": "nodes.conf", "--cluster-node-timeout": "5000",
			"--save": "", "--appendonly": "no",
			"--cluster-announce-hostname": name, "--cluster-preferred-endpoint-type": "hostname",
		}, flags, "service %s: %v", name, s.Command)
		assert.Equal(t, []string{"scaleout"}, s.Profiles, name)
		assert.NotNil(t, s.Healthcheck, name)
	}
	slices.Sort(nodes)
	assert.Equal(t, []string{"redis-node-1:6379", "redis-node-2:6379", "redis-node-3:6379"}, nodes)

	// The init creates the cluster over exactly those nodes, without
	// replicas, unless it is up already.
	initSvc := svc("redis-cluster-init")
	require.Len(t, initSvc.Command, 3)
	assert.Equal(t, []string{"sh", "-ec"}, initSvc.Command[:2])
	script := interpolate(initSvc.Command[2])
	var create []string
	for l := range strings.SplitSeq(script, "\n") {
		if fields := strings.Fields(l); len(fields) > 2 && fields[0] == "redis-cli" && fields[1] == "--cluster" && fields[2] == "create" {
			require.Nil(t, create, "the cluster is created once")
			create = fields[3:]
		}
	}
	require.NotNil(t, create, "redis-cluster-init runs redis-cli --cluster create:\n%s", script)
	var addrs, opts []string
	for i := 0; i < len(create); i++ {
		switch {
		case create[i] == "--cluster-replicas" && i+1 < len(create):
			opts = append(opts, create[i]+" "+create[i+1])
			i++
		case strings.HasPrefix(create[i], "--"):
			opts = append(opts, create[i])
		default:
			addrs = append(addrs, create[i])
		}
	}
	slices.Sort(addrs)
	assert.Equal(t, nodes, addrs, "the cluster is created over the nodes")
	assert.ElementsMatch(t, []string{"--cluster-replicas 0", "--cluster-yes"}, opts)
	upAlready := strings.Index(script, "cluster_state")
	assert.True(t, upAlready >= 0 && upAlready < strings.Index(script, "--cluster create"),
		"a cluster that is up is left alone")
	assert.Equal(t, "no", initSvc.Restart)
	for _, n := range nodes {
		host, _, _ := strings.Cut(n, ":")
		assert.Equal(t, "service_healthy", initSvc.DependsOn[host].Condition, "redis-cluster-init waits for %s", host)
	}

	// PgBouncer: transaction pooling in front of postgres, trusting as it
	// does.
	pgb := svc("pgbouncer")
	require.Len(t, pgb.Command, 2)
	var ini string
	for _, c := range pgb.Configs {
		if c.Target == pgb.Command[1] {
			ini = f.Configs[c.Source].Content
		}
	}
	require.NotEmpty(t, ini, "pgbouncer's configuration %s is one of the file's configs", pgb.Command[1])
	settings := iniSettings(ini)
	assert.Equal(t, "transaction", settings["pgbouncer.pool_mode"])
	assert.Contains(t, []string{"trust", "any"}, settings["pgbouncer.auth_type"])
	assert.Equal(t, "trust", svc("postgres").Environment["POSTGRES_HOST_AUTH_METHOD"], "PgBouncer trusts as PostgreSQL does")
	assert.Equal(t, "6432", settings["pgbouncer.listen_port"])
	// A server connection opened on a server that refused writes (a
	// failover) is closed within a minute of its opening, once released.
	assert.Equal(t, "60", settings["pgbouncer.server_lifetime"])
	assert.Equal(t, "host=postgres port=5432", settings["databases.*"])
	assert.Equal(t, "service_healthy", pgb.DependsOn["postgres"].Condition)
	assert.NotNil(t, pgb.Healthcheck)

	// The API and the workers: through PgBouncer with the URL an operator
	// writes for PostgreSQL (the service chooses its statement mode), on all
	// three nodes; migrations straight to PostgreSQL.
	api, worker := svc("api-scaleout"), svc("worker-scaleout")
	assert.Equal(t, []string{"/usr/local/bin/api"}, api.Command)
	assert.Equal(t, []string{"/usr/local/bin/worker"}, worker.Command)
	assert.Contains(t, api.Ports, "127.0.0.1:${API_PORT:-8080}:8080")
	require.NotNil(t, worker.Deploy)
	assert.Equal(t, 2, worker.Deploy.Replicas)
	for name, s := range map[string]composeService{"api-scaleout": api, "worker-scaleout": worker} {
		u := s.databaseURL(t)
		assert.Equal(t, "pgbouncer:6432", u.Host, "%s: DATABASE_URL", name)
		assert.Empty(t, u.Query().Get("default_query_exec_mode"), "%s: DATABASE_URL names no statement mode", name)
		got := s.redisNodes(t)
		slices.Sort(got)
		assert.Equal(t, nodes, got, "%s: REDIS_URL names every node", name)
	}
	for _, name := range scaleoutStack {
		s := f.Services[name]
		if m, ok := s.Environment["MIGRATE_DATABASE_URL"]; ok {
			u, err := url.Parse(interpolate(m))
			require.NoError(t, err)
			assert.Equal(t, "postgres:5432", u.Host, "%s: MIGRATE_DATABASE_URL names PostgreSQL directly", name)
			assert.Empty(t, u.Query().Get("default_query_exec_mode"), name)
		}
	}
	for _, name := range []string{"migrate-scaleout", "seed-scaleout"} {
		assert.Equal(t, "postgres:5432", svc(name).databaseURL(t).Host, "%s connects to PostgreSQL directly", name)
	}
	assert.True(t, svc("migrate-scaleout").runs("matchctl", "migrate"))
	assert.True(t, svc("seed-scaleout").runs("matchctl", "seed"))
}

// iniSettings reads a PgBouncer configuration: "section.key" -> value.
func iniSettings(ini string) map[string]string {
	out, section := map[string]string{}, ""
	for l := range strings.SplitSeq(ini, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, ";") || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			section = strings.Trim(l, "[]")
		default:
			k, v, _ := strings.Cut(l, "=")
			out[section+"."+strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out
}

// The API and the workers, whose image has no shell, are health-checked by
// matchctl probe on their operations port's /readyz.
func TestComposeAppHealthchecks(t *testing.T) {
	f := loadCompose(t)
	n := 0
	for name, s := range f.Services {
		if s.binary() != "api" && s.binary() != "worker" {
			continue
		}
		n++
		if !assert.NotNil(t, s.Healthcheck, "service %s has no health check", name) {
			continue
		}
		_, port, _ := strings.Cut(s.Environment["OPS_ADDR"], ":")
		assert.Equal(t, []string{"CMD", "/usr/local/bin/matchctl", "probe", "http://127.0.0.1:" + port + "/readyz"},
			s.Healthcheck.Test, "service %s", name)
	}
	assert.Equal(t, 4, n)
}

// exactTag is a release's full version: major.minor.patch, with a suffix
// of the image's own (v1.25.2-p0); PostgreSQL's releases have two parts.
var (
	exactTag         = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-.][a-z0-9.-]+)?$`)
	exactPostgresTag = regexp.MustCompile(`^[0-9]+\.[0-9]+(-[a-z0-9.-]+)?$`)
)

// pinned says whether image names one release: a digest, or an exact
// version tag (no latest, no major or minor alone).
func pinned(image string) bool {
	if _, digest, ok := strings.Cut(image, "@sha256:"); ok {
		return len(digest) == 64
	}
	slash := strings.LastIndex(image, "/")
	name, tag, ok := strings.Cut(image[slash+1:], ":")
	if !ok {
		return false
	}
	if name == "postgres" {
		return exactPostgresTag.MatchString(tag)
	}
	return exactTag.MatchString(tag)
}

// Every image docker-compose.yml pulls names one release.
func TestComposeImagesPinned(t *testing.T) {
	f := loadCompose(t)
	for name, s := range f.Services {
		if s.app() {
			continue // built here, tagged ${VERSION}
		}
		assert.True(t, pinned(interpolate(s.Image)), "service %s: image %q names no exact version", name, s.Image)
	}
	for image, want := range map[string]bool{
		"redis:7": false, "redis:7.4": false, "redis:latest": false, "redis": false, "grafana/grafana:11": false,
		"redis:7.4.5": true, "postgres:16.9": true, "postgres:16": false, "edoburu/pgbouncer:v1.25.2-p0": true,
		"quay.io/prometheus/prometheus:v3.5.0": true, "golang:1.26.8": true, "golang:1.26": false,
		"gcr.io/distroless/static-debian12@sha256:" + strings.Repeat("a", 64): true,
	} {
		assert.Equal(t, want, pinned(image), image)
	}
}

// Every stage of the Dockerfile starts from one release, but the
// distroless base: it publishes no version tags, only digests.
func TestDockerfileImagesPinned(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "Dockerfile"))
	require.NoError(t, err)
	n := 0
	for l := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "FROM" {
			continue
		}
		n++
		if strings.HasPrefix(f[1], "gcr.io/distroless/") {
			continue
		}
		assert.True(t, pinned(f[1]), "Dockerfile: FROM %s names no exact version", f[1])
	}
	assert.Equal(t, 2, n)
}
