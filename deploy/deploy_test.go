// Package deploy holds the tests of the deploy files: the Kubernetes
// manifests decode strictly into the Kubernetes API types, and what
// kustomize builds of the base and each overlay (krusty, the library
// kubectl kustomize is made of) is checked as objects: the pods' security,
// resources and environment, the database credentials each pod gets, the
// network policies; they set only variables the binaries read; the alert rules, the Grafana dashboard and
// the metrics adapter's rules parse and use only metrics the binaries
// export (docs/metrics.md, itself checked against the binaries' registries).
package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	promlabels "github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/memlimit"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/webhook"
)

// runtimeVariables are read by the Go runtime, not by internal/config.
var runtimeVariables = []string{"GOMEMLIMIT", "GOMAXPROCS", "GOGC", "GODEBUG"}

// notApplied are manifests kustomization.yaml leaves out on purpose.
var notApplied = []string{"secret.example.yaml"}

// kustomization is the part of kustomize's Kustomization the deploy files
// use; anything else is refused.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels,omitempty"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name   string `json:"name"`
		NewTag string `json:"newTag"`
	} `json:"images,omitempty"`
	Patches []struct {
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
		Patch string `json:"patch"`
	} `json:"patches,omitempty"`
}

// podMonitor is the part of Prometheus Operator's PodMonitor the deploy
// files use; anything else is refused.
type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector            metav1.LabelSelector `json:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// prometheusRule is Prometheus Operator's PrometheusRule: its groups are
// checked as deploy/prometheus/alerts.yaml's are.
type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []json.RawMessage `json:"groups"`
	} `json:"spec"`
}

// manifests are the decoded objects of deploy/k8s and its overlays.
type manifests struct {
	deployments map[string]*appsv1.Deployment
	jobs        map[string]*batchv1.Job
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	services    []*corev1.Service
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	namespaces  []*corev1.Namespace
	policies    []*networkingv1.NetworkPolicy
	podMonitors []*podMonitor
	rules       []*prometheusRule
	kustomize   map[string]kustomization // by directory
	files       map[string]string        // object "Kind/name" -> file
	dir         string                   // the kustomization built, "" for files
}

// documents splits a YAML stream on its "---" lines, leaving out documents
// with nothing but comments.
func documents(b []byte) [][]byte {
	var docs [][]byte
	for d := range strings.SplitSeq(string(b), "\n---") {
		d = strings.TrimPrefix(d, "\n")
		empty := true
		for l := range strings.SplitSeq(d, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
				empty = false
			}
		}
		if !empty {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// strict decodes one YAML document into v, refusing unknown and repeated
// fields.
func strict(doc []byte, v any) error { return yaml.UnmarshalStrict(doc, v) }

func newManifests() manifests {
	return manifests{
		deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		kustomize: map[string]kustomization{}, files: map[string]string{},
	}
}

// add decodes a YAML stream strictly into m; file names it (relative to
// deploy/). It returns how many objects it held.
func (m *manifests) add(t *testing.T, file string, b []byte) int {
	t.Helper()
	n := 0
	for i, doc := range documents(b) {
		n++
		where := fmt.Sprintf("deploy/%s (document %d)", file, i+1)
		var tm metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(doc, &tm), where)
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "kustomize.config.k8s.io/v1beta1 Kustomization":
			var k kustomization
			if assert.NoError(t, strict(doc, &k), where) {
				m.kustomize[filepath.Dir(file)] = k
			}
			continue
		case "v1 Namespace":
			o := &corev1.Namespace{}
			m.namespaces, obj = append(m.namespaces, o), o
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 Secret":
			obj = &corev1.Secret{}
		case "v1 Service":
			o := &corev1.Service{}
			m.services, obj = append(m.services, o), o
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "batch/v1 Job":
			obj = &batchv1.Job{}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			o := &autoscalingv2.HorizontalPodAutoscaler{}
			m.hpas, obj = append(m.hpas, o), o
		case "policy/v1 PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			m.pdbs, obj = append(m.pdbs, o), o
		case "networking.k8s.io/v1 NetworkPolicy":
			o := &networkingv1.NetworkPolicy{}
			m.policies, obj = append(m.policies, o), o
		case "monitoring.coreos.com/v1 PodMonitor":
			o := &podMonitor{}
			m.podMonitors, obj = append(m.podMonitors, o), o
		case "monitoring.coreos.com/v1 PrometheusRule":
			o := &prometheusRule{}
			m.rules, obj = append(m.rules, o), o
		default:
			t.Errorf("%s: no test decodes %s %s; add it to manifests.add", where, tm.APIVersion, tm.Kind)
			continue
		}
		if !assert.NoError(t, strict(doc, obj), where) {
			continue
		}
		name := obj.(metav1.Object).GetName()
		assert.NotEmpty(t, name, "%s: metadata.name", where)
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			m.configMaps[name] = o
		case *corev1.Secret:
			m.secrets[name] = o
		case *appsv1.Deployment:
			m.deployments[name] = o
		case *batchv1.Job:
			m.jobs[name] = o
		}
		m.files[tm.Kind+"/"+name] = file
	}
	return n
}

// manifestDirs are the directories of deploy/ that hold Kubernetes
// manifests: the base and its overlays.
var manifestDirs = []string{"k8s", "overlays"}

// loadFiles decodes every file of manifestDirs as written: what kustomize
// is given. The checks of what is deployed read builds instead.
func loadFiles(t *testing.T) manifests {
	t.Helper()
	m := newManifests()
	root := filepath.Join(testutil.RepoRoot(t), "deploy")
	n := 0
	for _, dir := range manifestDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if !strings.HasSuffix(path, ".yaml") {
				t.Errorf("deploy/%s: only YAML manifests (.yaml) belong here", rel)
				return nil
			}
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			n += m.add(t, rel, b)
			return nil
		})
		require.NoError(t, err)
	}
	require.Greater(t, n, 10, "deploy/k8s has hardly any manifests")
	return m
}

func TestManifestsDecodeStrictly(t *testing.T) {
	m := loadFiles(t)
	for _, name := range []string{"matching-api", "matching-worker"} {
		assert.Contains(t, m.deployments, name)
	}
	assert.Contains(t, m.jobs, "matching-migrate")
	assert.Contains(t, m.configMaps, "matching-config")
	assert.Contains(t, m.secrets, "matching-secrets")

	// A manifest with an unknown field is refused, not silently dropped.
	err := strict([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  replica: 2\n"), &appsv1.Deployment{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "replica"`)
	err = strict([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  A: \"1\"\n  A: \"2\"\n"), &corev1.ConfigMap{})
	require.Error(t, err, "a repeated key is refused")
}

// Each kustomization lists files that exist, and the base applies every
// manifest of its directory but the examples.
func TestKustomizations(t *testing.T) {
	m := loadFiles(t)
	root := filepath.Join(testutil.RepoRoot(t), "deploy")
	require.Contains(t, m.kustomize, "k8s")
	for dir, k := range m.kustomize {
		for _, r := range k.Resources {
			_, err := os.Stat(filepath.Join(root, dir, r))
			assert.NoError(t, err, "deploy/%s/kustomization.yaml: resource %s", dir, r)
		}
		for _, p := range k.Patches {
			_, ok := m.files[p.Target.Kind+"/"+p.Target.Name]
			assert.True(t, ok, "deploy/%s/kustomization.yaml patches %s/%s, which no manifest defines", dir, p.Target.Kind, p.Target.Name)
		}
		assert.Equal(t, "matching", k.Namespace, "deploy/%s/kustomization.yaml: the overlay's own objects need the namespace too", dir)
	}
	entries, err := os.ReadDir(filepath.Join(root, "k8s"))
	require.NoError(t, err)
	base := m.kustomize["k8s"]
	for _, e := range entries {
		if e.IsDir() || e.Name() == "kustomization.yaml" {
			continue
		}
		listed := slices.Contains(base.Resources, e.Name())
		assert.Equal(t, !slices.Contains(notApplied, e.Name()), listed, "deploy/k8s/kustomization.yaml and %s", e.Name())
	}
	for _, s := range m.secrets {
		assert.Contains(t, notApplied, filepath.Base(m.files["Secret/"+s.Name]), "a Secret with values belongs in no applied manifest")
	}
}

// build runs kustomize on deploy/dir, as kubectl apply -k would, and
// decodes the objects it makes strictly.
func build(t *testing.T, dir string) manifests {
	t.Helper()
	root := filepath.Join(testutil.RepoRoot(t), "deploy")
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, dir))
	require.NoError(t, err, "kustomize build deploy/%s", dir)
	out, err := res.AsYaml()
	require.NoError(t, err)
	m := newManifests()
	m.dir = dir
	require.GreaterOrEqual(t, m.add(t, dir+" (built)", out), 9, "deploy/%s builds hardly any objects", dir)
	return m
}

// builds are what kustomize makes of the base (k8s) and of each overlay,
// with the example Secrets (which no kustomization applies) added, as an
// operator must create them.
func builds(t *testing.T) []manifests {
	t.Helper()
	files := loadFiles(t)
	root := filepath.Join(testutil.RepoRoot(t), "deploy")
	examples, err := os.ReadFile(filepath.Join(root, "k8s", "secret.example.yaml"))
	require.NoError(t, err)
	var out []manifests
	for _, dir := range slices.Sorted(maps.Keys(files.kustomize)) {
		m := build(t, dir)
		m.add(t, "k8s/secret.example.yaml", examples)
		out = append(out, m)
	}
	require.GreaterOrEqual(t, len(out), 3, "the base and its overlays")
	return out
}

// What kustomize makes of the base and each overlay decodes strictly, has
// every object in the namespace and applies no Secret.
func TestKustomizeBuilds(t *testing.T) {
	for dir := range loadFiles(t).kustomize {
		built := build(t, dir)
		assert.Empty(t, built.secrets, "deploy/%s: a Secret with values belongs in no applied manifest", dir)
		for name, d := range built.deployments {
			if slices.ContainsFunc(built.hpas, func(h *autoscalingv2.HorizontalPodAutoscaler) bool { return h.Spec.ScaleTargetRef.Name == name }) {
				assert.Nil(t, d.Spec.Replicas, "deploy/%s: %s is scaled by an HPA and has a replicas field", dir, name)
			}
		}
		var objs []metav1.Object
		for _, o := range built.deployments {
			objs = append(objs, o)
		}
		for _, o := range built.jobs {
			objs = append(objs, o)
		}
		for _, o := range built.configMaps {
			objs = append(objs, o)
		}
		for _, o := range built.services {
			objs = append(objs, o)
		}
		for _, o := range built.hpas {
			objs = append(objs, o)
		}
		for _, o := range built.pdbs {
			objs = append(objs, o)
		}
		for _, o := range built.policies {
			objs = append(objs, o)
		}
		for _, o := range built.podMonitors {
			objs = append(objs, o)
		}
		for _, o := range built.rules {
			objs = append(objs, o)
		}
		for _, o := range objs {
			assert.Equal(t, "matching", o.GetNamespace(), "deploy/%s: %s", dir, o.GetName())
		}
	}
}

// podSpecs are the pod templates of every Deployment and Job.
func (m manifests) podSpecs() map[string]*corev1.PodSpec {
	out := map[string]*corev1.PodSpec{}
	for n, d := range m.deployments {
		out["Deployment/"+n] = &d.Spec.Template.Spec
	}
	for n, j := range m.jobs {
		out["Job/"+n] = &j.Spec.Template.Spec
	}
	return out
}

// Every pod meets the namespace's "restricted" Pod Security Standard and
// has its memory bounded.
func TestSecurityContexts(t *testing.T) {
	for _, m := range builds(t) {
		t.Run(m.dir, func(t *testing.T) { securityContexts(t, m) })
	}
}

func securityContexts(t *testing.T, m manifests) {
	require.Len(t, m.namespaces, 1)
	assert.Equal(t, "restricted", m.namespaces[0].Labels["pod-security.kubernetes.io/enforce"])
	for name, spec := range m.podSpecs() {
		sc := spec.SecurityContext
		if assert.NotNil(t, sc, name) {
			assert.Equal(t, ptrTrue, sc.RunAsNonRoot, "%s: runAsNonRoot", name)
			if assert.NotNil(t, sc.RunAsUser, name) {
				assert.NotZero(t, *sc.RunAsUser, "%s: runAsUser", name)
			}
			if assert.NotNil(t, sc.SeccompProfile, name) {
				assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type, name)
			}
		}
		assert.Equal(t, ptrFalse, spec.AutomountServiceAccountToken, "%s: no API token mounted", name)
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			where := name + " container " + c.Name
			csc := c.SecurityContext
			if !assert.NotNil(t, csc, where) {
				continue
			}
			assert.Equal(t, ptrFalse, csc.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation", where)
			assert.Equal(t, ptrTrue, csc.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem", where)
			if assert.NotNil(t, csc.Capabilities, where) {
				assert.Equal(t, []corev1.Capability{"ALL"}, csc.Capabilities.Drop, where)
				assert.Empty(t, csc.Capabilities.Add, where)
			}
			assert.Nil(t, csc.Privileged, where)
			assert.False(t, c.Resources.Limits.Memory().IsZero(), "%s: a memory limit", where)
			assert.False(t, c.Resources.Requests.Cpu().IsZero(), "%s: a CPU request", where)
		}
	}
}

var ptrTrue, ptrFalse = new(bool), new(bool)

func init() { *ptrTrue = true }

// env is what a container's environment holds: its env entries and every
// key of the ConfigMaps and Secrets it imports.
func (m manifests) env(t *testing.T, where string, c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, src := range c.EnvFrom {
		switch {
		case src.ConfigMapRef != nil:
			cm, ok := m.configMaps[src.ConfigMapRef.Name]
			if assert.True(t, ok, "%s imports ConfigMap %s, which no manifest defines", where, src.ConfigMapRef.Name) {
				for k, v := range cm.Data {
					out[k] = corev1.EnvVar{Name: k, Value: v}
				}
			}
		case src.SecretRef != nil:
			s, ok := m.secrets[src.SecretRef.Name]
			if assert.True(t, ok, "%s imports Secret %s, which no example defines", where, src.SecretRef.Name) {
				for k, v := range s.StringData {
					out[k] = corev1.EnvVar{Name: k, Value: v}
				}
			}
		}
		assert.Empty(t, src.Prefix, where)
	}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// Every variable the manifests set is one the binaries read: internal/config
// reads them all (config.Variables), the Go runtime a few of its own.
func TestEnvironmentVariablesAreRead(t *testing.T) {
	for _, m := range builds(t) {
		t.Run(m.dir, func(t *testing.T) { environmentVariablesAreRead(t, m) })
	}
}

func environmentVariablesAreRead(t *testing.T, m manifests) {
	known := slices.Concat(config.Variables, runtimeVariables)
	checked := 0
	for name, spec := range m.podSpecs() {
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			where := name + " container " + c.Name
			for k := range m.env(t, where, c) {
				checked++
				assert.Contains(t, known, k, "%s sets %s, which no binary reads", where, k)
			}
		}
	}
	for name, cm := range m.configMaps {
		for k := range cm.Data {
			assert.Contains(t, known, k, "ConfigMap %s holds %s, which no binary reads", name, k)
		}
	}
	for name, s := range m.secrets {
		if name == "matching-secrets" || name == "matching-migrate-secrets" {
			for k := range s.StringData {
				assert.Contains(t, known, k, "Secret %s holds %s, which no binary reads", name, k)
			}
		}
	}
	assert.Greater(t, checked, 20)
}

// What each binary needs, as the manifests give it.
func TestDeploymentsWorkAsWritten(t *testing.T) {
	for _, m := range builds(t) {
		t.Run(m.dir, func(t *testing.T) { deploymentsWorkAsWritten(t, m) })
	}
}

func deploymentsWorkAsWritten(t *testing.T, m manifests) {
	api, worker := m.deployments["matching-api"], m.deployments["matching-worker"]
	require.NotNil(t, api)
	require.NotNil(t, worker)
	apiC, workerC := api.Spec.Template.Spec.Containers[0], worker.Spec.Template.Spec.Containers[0]
	apiEnv, workerEnv := m.env(t, "api", apiC), m.env(t, "worker", workerC)

	// Both binaries get what config.Load needs; the API a way to check tokens.
	for _, env := range []map[string]corev1.EnvVar{apiEnv, workerEnv} {
		for _, k := range []string{"DATABASE_URL", "REDIS_URL", "OPS_ADDR", "IMAGE_BASE_URL"} {
			assert.Contains(t, env, k)
		}
	}
	assert.True(t, apiEnv["AUTH_JWKS_URL"].Value != "" || apiEnv["AUTH_HS256_SECRET"].Value != "")
	if assert.Contains(t, m.secrets, "matching-migrate-secrets") {
		assert.Contains(t, m.secrets["matching-migrate-secrets"].StringData, "MIGRATE_DATABASE_URL")
	}
	// The service chooses its statement mode: the URL names none.
	assert.NotContains(t, m.secrets["matching-secrets"].StringData["DATABASE_URL"], "default_query_exec_mode",
		"the example DATABASE_URL is the one an operator writes for PostgreSQL")
	for _, k := range []string{"WORKER_CONCURRENCY", "WEBHOOK_CONCURRENCY"} {
		assert.Contains(t, workerEnv, k)
		assert.NotContains(t, apiEnv, k)
	}

	// The webhook subscribers: the worker only, from a mounted Secret whose
	// example the worker would accept.
	assert.NotContains(t, apiEnv, "WEBHOOK_ENDPOINTS_FILE", "the API writes no webhook deliveries")
	file := workerEnv["WEBHOOK_ENDPOINTS_FILE"].Value
	require.NotEmpty(t, file)
	mounted := false
	for _, vm := range workerC.VolumeMounts {
		if strings.HasPrefix(file, vm.MountPath+"/") {
			mounted = true
			for _, v := range worker.Spec.Template.Spec.Volumes {
				if v.Name == vm.Name && assert.NotNil(t, v.Secret) {
					s := m.secrets[v.Secret.SecretName]
					require.NotNil(t, s, "the webhook Secret %s has an example", v.Secret.SecretName)
					body, ok := s.StringData[strings.TrimPrefix(file, vm.MountPath+"/")]
					require.True(t, ok, "the example Secret holds %s", file)
					_, err := webhook.Parse([]byte(body))
					assert.NoError(t, err, "the example endpoints file")
					assert.Nil(t, v.Secret.Optional, "without the file the worker must not start")
				}
			}
		}
	}
	assert.True(t, mounted, "%s is on a volume of the worker", file)

	// Probes on the operations port, which OPS_ADDR, the port and the scrape
	// annotation agree on.
	for _, d := range []*appsv1.Deployment{api, worker} {
		c := d.Spec.Template.Spec.Containers[0]
		env := m.env(t, d.Name, c)
		_, port, _ := strings.Cut(env["OPS_ADDR"].Value, ":")
		assert.Equal(t, port, d.Spec.Template.Annotations["prometheus.io/port"], d.Name)
		var opsPort string
		for _, p := range c.Ports {
			if p.Name == "ops" {
				opsPort = fmt.Sprint(p.ContainerPort)
			}
		}
		assert.Equal(t, port, opsPort, d.Name)
		if assert.NotNil(t, c.ReadinessProbe, d.Name) {
			assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, d.Name)
			assert.Equal(t, "ops", c.ReadinessProbe.HTTPGet.Port.String(), d.Name)
		}
		if assert.NotNil(t, c.LivenessProbe, d.Name) {
			assert.Equal(t, "/livez", c.LivenessProbe.HTTPGet.Path, d.Name)
		}
		assert.NotNil(t, c.StartupProbe, "%s: the catalogue loads before the probes can answer", d.Name)
	}

	// Production seeds nothing: only matchctl migrate runs in the base's Job.
	for _, c := range m.jobs["matching-migrate"].Spec.Template.Spec.Containers {
		assert.Equal(t, []string{"/usr/local/bin/matchctl", "migrate"}, c.Command)
	}
	assert.Empty(t, m.jobs["matching-migrate"].Spec.Template.Spec.InitContainers)
	for name, j := range m.jobs {
		for _, c := range j.Spec.Template.Spec.Containers {
			if slices.Contains(c.Command, "seed") {
				assert.Equal(t, "overlays/demo", m.dir, "Job %s seeds outside the demo overlay", name)
			}
		}
	}

	// The HPA owns the API's count; each HPA and budget names a Deployment.
	assert.Nil(t, api.Spec.Replicas, "the API's replica count is the HPA's")
	for _, h := range m.hpas {
		d, ok := m.deployments[h.Spec.ScaleTargetRef.Name]
		if assert.True(t, ok, "HPA %s scales %s", h.Name, h.Spec.ScaleTargetRef.Name) {
			for _, mt := range h.Spec.Metrics {
				if mt.Type == autoscalingv2.ResourceMetricSourceType {
					assert.False(t, d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().IsZero(),
						"HPA %s: CPU utilisation is a share of the request", h.Name)
				}
			}
		}
	}
	for _, p := range m.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		require.NoError(t, err)
		matched := 0
		for _, d := range m.deployments {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				matched++
			}
		}
		assert.Equal(t, 1, matched, "PodDisruptionBudget %s selects one Deployment", p.Name)
	}
	assert.Len(t, m.pdbs, 2)
	for _, s := range m.services {
		sel := labels.SelectorFromSet(s.Spec.Selector)
		for _, d := range m.deployments {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				for _, p := range s.Spec.Ports {
					assert.True(t, slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool {
						return cp.Name == p.TargetPort.String()
					}), "Service %s targets port %s of %s", s.Name, p.TargetPort.String(), d.Name)
				}
			}
		}
	}
}

// metricNames are the names a query may use: each documented metric, with
// _bucket, _sum and _count for histograms.
func metricNames(t *testing.T) map[string]bool {
	out := map[string]bool{}
	for name, d := range testutil.MetricsDoc(t) {
		out[name] = true
		if d.Type == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[name+s] = true
			}
		}
	}
	return out
}

var promql = parser.NewParser(parser.Options{})

// reporter is what checkQuery reports to: a test, or a recorder.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// recorder keeps the failures reported to it.
type recorder struct{ failures []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// checkQuery parses q and requires every metric it selects to exist.
func checkQuery(t reporter, where, q string, names map[string]bool) {
	t.Helper()
	expr, err := promql.ParseExpr(q)
	if !assert.NoError(t, err, "%s: %s", where, q) {
		return
	}
	selectors := 0
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			selectors++
			assert.True(t, names[vs.Name], "%s uses %s, which no binary exports (docs/metrics.md)", where, vs.Name)
		}
		return nil
	})
	assert.NotZero(t, selectors, "%s selects no metric: %s", where, q)
}

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(t *testing.T, path string) map[string]bool {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for l := range strings.SplitSeq(string(b), "\n") {
		if h, ok := strings.CutPrefix(l, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out
}

func TestAlertRules(t *testing.T) {
	root := testutil.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "alerts.yaml"))
	require.NoError(t, err)
	groups := checkRules(t, "deploy/prometheus/alerts.yaml", b)
	names := metricNames(t)

	// The Prometheus Operator overlay's PrometheusRule holds the same
	// groups (scripts/prometheusrule.sh writes it), checked the same way.
	n := 0
	for _, m := range builds(t) {
		for _, r := range m.rules {
			n++
			where := fmt.Sprintf("deploy/%s: PrometheusRule %s", m.dir, r.Name)
			doc, err := json.Marshal(map[string]any{"groups": r.Spec.Groups})
			require.NoError(t, err)
			got := checkRules(t, where, doc)
			assert.Equal(t, groups, got, "%s differs from deploy/prometheus/alerts.yaml: run scripts/prometheusrule.sh", where)
		}
	}
	assert.NotZero(t, n, "an overlay applies the alerts as a PrometheusRule")

	// A rule using a metric that does not exist fails the check.
	rec := &recorder{}
	checkQuery(rec, "test", `sum(rate(matching_no_such_metric_total[5m]))`, names)
	assert.Len(t, rec.failures, 1)
	rec = &recorder{}
	checkQuery(rec, "test", `sum(rate(matching_http_requests_total[5m])`, names)
	assert.Len(t, rec.failures, 1, "a query that does not parse fails")
}

// checkRules parses a rule file (where names it) as Prometheus does and
// checks every rule: an alert on exported metrics, with a severity, a
// summary and a runbook entry; an absent() alert per binary.
func checkRules(t *testing.T, where string, b []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(b, false, model.UTF8Validation, promql, nil)
	require.Empty(t, errs, where)
	names := metricNames(t)
	runbook := anchors(t, filepath.Join(testutil.RepoRoot(t), "docs", "operations.md"))
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "%s: every rule is an alert", where)
			alerts++
			checkQuery(t, where+": alert "+r.Alert, r.Expr, names)
			assert.Contains(t, []string{"page", "warn", "info"}, r.Labels["severity"], r.Alert)
			assert.NotEmpty(t, r.Annotations["summary"], r.Alert)
			link, ok := strings.CutPrefix(r.Annotations["runbook_url"], "docs/operations.md#")
			if assert.True(t, ok, "%s: runbook_url is an entry of docs/operations.md", r.Alert) {
				assert.True(t, runbook[link], "%s: docs/operations.md has no heading #%s", r.Alert, link)
			}
		}
	}
	assert.Greater(t, alerts, 15, where)
	assertAbsentAlerts(t, groups)
	return groups
}

// The PodMonitor scrapes the operations port of every API and worker pod.
func TestPodMonitor(t *testing.T) {
	n := 0
	for _, m := range builds(t) {
		for _, pm := range m.podMonitors {
			n++
			sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
			require.NoError(t, err)
			require.Len(t, pm.Spec.PodMetricsEndpoints, 1)
			ep := pm.Spec.PodMetricsEndpoints[0]
			assert.Equal(t, "/metrics", ep.Path)
			for _, name := range []string{"matching-api", "matching-worker"} {
				d := m.deployments[name]
				require.NotNil(t, d, "deploy/%s: %s", m.dir, name)
				assert.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)), "deploy/%s: PodMonitor %s selects %s's pods", m.dir, pm.Name, name)
				var port int32
				for _, p := range m.container(t, name).Ports {
					if p.Name == ep.Port {
						port = p.ContainerPort
					}
				}
				want, err := strconv.Atoi(d.Spec.Template.Annotations["prometheus.io/port"])
				require.NoError(t, err)
				assert.Equal(t, int32(want), port, "deploy/%s: PodMonitor port %q on %s is its operations port", m.dir, ep.Port, name)
			}
		}
	}
	assert.NotZero(t, n, "an overlay has a PodMonitor")
}

// grafanaPanel is the part of a Grafana panel the test reads; rows hold
// panels of their own.
type grafanaPanel struct {
	ID      int            `json:"id"`
	Type    string         `json:"type"`
	Title   string         `json:"title"`
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
}

func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "grafana", "matching-dashboard.json"))
	require.NoError(t, err)
	var dash struct {
		UID        string         `json:"uid"`
		Title      string         `json:"title"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
				IncludeAll bool   `json:"includeAll"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	require.NotEmpty(t, dash.UID)
	// A namespace variable (from the metrics' namespace label, all of them
	// at once allowed), and every query keeps to it: a namespace's
	// dashboard never sums another's series.
	var nsVar bool
	for _, v := range dash.Templating.List {
		if v.Name == "namespace" {
			nsVar = true
			assert.Equal(t, "query", v.Type)
			assert.Equal(t, "label_values(matching_build_info, namespace)", v.Definition)
			assert.True(t, v.IncludeAll)
		}
	}
	assert.True(t, nsVar, "the dashboard has a namespace variable")
	names := metricNames(t)
	// Grafana's own variables, as Prometheus would see them.
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")
	ids := map[int]bool{}
	used := map[string]bool{}
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			assert.False(t, ids[p.ID], "panel id %d repeats", p.ID)
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			assert.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
			for _, tg := range p.Targets {
				q := vars.Replace(tg.Expr)
				checkQuery(t, fmt.Sprintf("panel %q", p.Title), q, names)
				if expr, err := promql.ParseExpr(q); err == nil {
					parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
						if vs, ok := n.(*parser.VectorSelector); ok {
							assert.True(t, slices.ContainsFunc(vs.LabelMatchers, func(m *promlabels.Matcher) bool {
								return m.Name == "namespace" && m.Type == promlabels.MatchRegexp && m.Value == "$namespace"
							}), "panel %q: %s is not kept to the namespace variable", p.Title, vs.Name)
						}
						return nil
					})
				}
				for m := range names {
					if strings.Contains(q, m) {
						used[m] = true
					}
				}
			}
		}
	}
	walk(dash.Panels)
	// The panels the runbook points at.
	for _, m := range []string{"matching_http_requests_total", "matching_http_request_duration_seconds_bucket", "matching_dependency_up",
		"matching_queue_latency_seconds", "matching_webhook_deliveries_total", "matching_feed_lag_seconds_bucket",
		"matching_swipes_total", "matching_feedback_total", "matching_outbox_oldest_unpublished_age_seconds",
		"matching_db_pool_connections", "matching_db_pool_max_connections", "matching_db_pool_waited_acquires_total",
		"matching_retention_passes_total", "matching_factor_cache_requests_total", "matching_factor_cache_bytes"} {
		assert.True(t, used[m], "the dashboard shows %s", m)
	}
}

// The prometheus-adapter rules that serve the worker's autoscaling metric.
func TestMetricsAdapterRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "deploy", "prometheus", "adapter-config.yaml"))
	require.NoError(t, err)
	var cfg struct {
		ExternalRules []struct {
			SeriesQuery string `json:"seriesQuery"`
			Resources   struct {
				Overrides map[string]struct {
					Resource string `json:"resource"`
				} `json:"overrides"`
			} `json:"resources"`
			Name struct {
				Matches string `json:"matches"`
				As      string `json:"as"`
			} `json:"name"`
			MetricsQuery string `json:"metricsQuery"`
		} `json:"externalRules"`
	}
	require.NoError(t, strict(b, &cfg))
	require.NotEmpty(t, cfg.ExternalRules)
	names := metricNames(t)
	served := map[string]bool{}
	for _, r := range cfg.ExternalRules {
		series, err := promql.ParseExpr(r.SeriesQuery)
		require.NoError(t, err, r.SeriesQuery)
		vs, ok := series.(*parser.VectorSelector)
		require.True(t, ok, "seriesQuery is a selector: %s", r.SeriesQuery)
		assert.True(t, names[vs.Name], "seriesQuery uses %s, which no binary exports", vs.Name)
		// The adapter's template, filled as it would be for the HPA.
		q := strings.NewReplacer("<<.Series>>", vs.Name, "<<.LabelMatchers>>", `namespace="matching",queue="critical"`,
			"<<.GroupBy>>", "namespace").Replace(r.MetricsQuery)
		checkQuery(t, "adapter rule", q, names)
		served[r.Name.As] = true
	}
	// Every external metric an HPA asks for is served.
	var hpas []*autoscalingv2.HorizontalPodAutoscaler
	for _, m := range builds(t) {
		hpas = append(hpas, m.hpas...)
	}
	for _, h := range hpas {
		for _, mt := range h.Spec.Metrics {
			if mt.External != nil {
				assert.True(t, served[mt.External.Metric.Name], "HPA %s reads %s, which no adapter rule serves", h.Name, mt.External.Metric.Name)
			}
		}
	}
}

// container returns the first container of Deployment name.
func (m manifests) container(t *testing.T, name string) corev1.Container {
	t.Helper()
	d, ok := m.deployments[name]
	require.True(t, ok, "deploy/%s builds no Deployment %s", m.dir, name)
	return d.Spec.Template.Spec.Containers[0]
}

// On a big node the binaries follow the pod, not the node: the Go runtime's
// soft memory limit stays below the container's memory limit (the
// binaries' own 90 % of the cgroup limit, internal/memlimit, unless a
// GOMEMLIMIT below the limit is given), and GOMAXPROCS is the pod's CPU
// request, so the pools and slots sized from it (store.APISettings) fit the
// CPU the pod is given rather than the node's cores.
func TestMemoryAndCPUFollowThePod(t *testing.T) {
	require.Less(t, memlimit.Fraction, 1.0)
	for _, m := range builds(t) {
		for _, name := range []string{"matching-api", "matching-worker"} {
			c := m.container(t, name)
			where := m.dir + ": " + name
			env := m.env(t, where, c)
			limit := c.Resources.Limits.Memory()
			require.False(t, limit.IsZero(), "%s: a memory limit", where)

			// Memory: no GOMEMLIMIT (the binary takes 90 % of the cgroup
			// limit), or a figure below the limit. The container's limit
			// itself (resourceFieldRef limits.memory) leaves the GC no
			// headroom before the OOM killer.
			if e, ok := env["GOMEMLIMIT"]; ok {
				assert.Nil(t, e.ValueFrom, "%s: GOMEMLIMIT from a field reference can only equal the limit or a unit of it", where)
				q, err := resource.ParseQuantity(strings.TrimSuffix(strings.TrimSuffix(e.Value, "B"), "i") + "i")
				if assert.NoError(t, err, "%s: GOMEMLIMIT %q", where, e.Value) {
					assert.Less(t, q.Value(), limit.Value()*95/100, "%s: GOMEMLIMIT below the container's limit", where)
				}
			}

			// CPU: GOMAXPROCS from this container's CPU request, in whole
			// cores (the Downward API rounds up, so 500m is 1).
			e, ok := env["GOMAXPROCS"]
			if assert.True(t, ok, "%s: GOMAXPROCS is set", where) && assert.NotNil(t, e.ValueFrom, where) &&
				assert.NotNil(t, e.ValueFrom.ResourceFieldRef, where) {
				ref := e.ValueFrom.ResourceFieldRef
				assert.Equal(t, "requests.cpu", ref.Resource, where)
				assert.Contains(t, []string{"", c.Name}, ref.ContainerName, where)
				assert.True(t, ref.Divisor.IsZero() || ref.Divisor.Cmp(resource.MustParse("1")) == 0,
					"%s: divisor 1, so the value is a count of cores, not millicores", where)
			}
			req := c.Resources.Requests.Cpu()
			require.False(t, req.IsZero(), "%s: a CPU request", where)
			assert.LessOrEqual(t, req.MilliValue(), int64(4000), "%s: GOMAXPROCS is sized for a pod, not a node", where)
		}
	}
}

// The schema owner's credentials (MIGRATE_DATABASE_URL) reach only the
// containers that run matchctl migrate; the API and the worker get a
// DATABASE_URL naming another role.
func TestOwnerCredentialsOnlyInMigrationJob(t *testing.T) {
	for _, m := range builds(t) {
		owner, ok := m.secrets["matching-migrate-secrets"]
		if !assert.True(t, ok, "the example Secrets hold the owner's credentials apart") {
			owner = &corev1.Secret{}
		}
		app := m.secrets["matching-secrets"]
		require.NotNil(t, app)
		assert.NotContains(t, app.StringData, "MIGRATE_DATABASE_URL", "the API and the worker import matching-secrets")
		ownerURL, err := url.Parse(owner.StringData["MIGRATE_DATABASE_URL"])
		require.NoError(t, err)
		appURL, err := url.Parse(app.StringData["DATABASE_URL"])
		require.NoError(t, err)
		assert.NotEqual(t, ownerURL.User.Username(), appURL.User.Username(), "DATABASE_URL names a role that does not own the schema")

		migrators := 0
		for name, spec := range m.podSpecs() {
			for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
				where := m.dir + ": " + name + " container " + c.Name
				migrates := slices.Equal(c.Command, []string{"/usr/local/bin/matchctl", "migrate"})
				env := m.env(t, where, c)
				_, hasOwner := env["MIGRATE_DATABASE_URL"]
				assert.Equal(t, migrates, hasOwner, "%s: the owner's credentials exactly where matchctl migrate runs", where)
				if migrates {
					migrators++
					assert.NotContains(t, env, "DATABASE_URL", "%s: the migration needs only the owner's URL", where)
				}
				for _, e := range c.Env {
					if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == owner.Name {
						assert.True(t, migrates, "%s reads %s", where, owner.Name)
					}
				}
			}
			for _, v := range spec.Volumes {
				assert.False(t, v.Secret != nil && v.Secret.SecretName == owner.Name, "%s mounts %s", name, owner.Name)
			}
		}
		assert.NotZero(t, migrators, "deploy/%s runs matchctl migrate", m.dir)
		for _, name := range []string{"matching-api", "matching-worker"} {
			env := m.env(t, name, m.container(t, name))
			assert.NotContains(t, env, "MIGRATE_DATABASE_URL", "%s: %s", m.dir, name)
			assert.Contains(t, env, "DATABASE_URL", "%s: %s", m.dir, name)
		}
	}
}

// peer is who a policy rule admits: everyone (any), or pods matching a
// namespace and a pod selector.
type peer struct {
	any       bool
	namespace map[string]string
	pods      map[string]string
}

// admitted lists who the namespace's policies let connect to port (a
// container port of pod, by number) of a pod with podLabels. A pod no
// Ingress policy selects admits everyone.
func (m manifests) admitted(t *testing.T, podLabels map[string]string, pod corev1.Container, port int32) []peer {
	t.Helper()
	selected := false
	var out []peer
	for _, p := range m.policies {
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		require.NoError(t, err)
		if !sel.Matches(labels.Set(podLabels)) || !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			continue
		}
		selected = true
		for _, r := range p.Spec.Ingress {
			if !portMatches(r.Ports, pod, port) {
				continue
			}
			if len(r.From) == 0 {
				out = append(out, peer{any: true})
			}
			for _, f := range r.From {
				assert.Nil(t, f.IPBlock, "NetworkPolicy %s: an IP block admits whatever sits at those addresses", p.Name)
				if f.NamespaceSelector == nil || f.PodSelector == nil {
					// A pod selector alone is this namespace's pods; a
					// namespace selector alone is every pod there.
					out = append(out, peer{any: f.NamespaceSelector != nil && len(f.NamespaceSelector.MatchLabels) == 0})
					continue
				}
				assert.Empty(t, f.NamespaceSelector.MatchExpressions, p.Name)
				assert.Empty(t, f.PodSelector.MatchExpressions, p.Name)
				out = append(out, peer{namespace: f.NamespaceSelector.MatchLabels, pods: f.PodSelector.MatchLabels,
					any: len(f.NamespaceSelector.MatchLabels) == 0 || len(f.PodSelector.MatchLabels) == 0})
			}
		}
	}
	if !selected {
		return []peer{{any: true}}
	}
	return out
}

// portMatches reports whether a rule's ports (none: all) include port,
// given by number or by the container's name for it.
func portMatches(ports []networkingv1.NetworkPolicyPort, c corev1.Container, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p.Port == nil {
			return true
		}
		if p.Port.IntVal == port && p.Port.StrVal == "" {
			return true
		}
		for _, cp := range c.Ports {
			if cp.Name != "" && cp.Name == p.Port.StrVal && cp.ContainerPort == port {
				return true
			}
		}
	}
	return false
}

// The operations ports (metrics, pprof, probes) are open to the scraper
// only: Prometheus pods in the monitoring namespace. Operators reach them
// by kubectl port-forward, which network policies do not filter. The API's
// public port stays open, and every other pod of the namespace (the Jobs)
// admits nobody.
func TestOpsPortsOnlyToTheScraper(t *testing.T) {
	scraper := peer{namespace: map[string]string{"kubernetes.io/metadata.name": "monitoring"},
		pods: map[string]string{"app.kubernetes.io/name": "prometheus"}}
	for _, m := range builds(t) {
		for _, name := range []string{"matching-api", "matching-worker"} {
			d := m.deployments[name]
			c := m.container(t, name)
			where := m.dir + ": " + name
			env := m.env(t, where, c)
			_, port, _ := strings.Cut(env["OPS_ADDR"].Value, ":")
			ops, err := strconv.Atoi(port)
			require.NoError(t, err, where)
			assert.Equal(t, []peer{scraper}, m.admitted(t, d.Spec.Template.Labels, c, int32(ops)), "%s: port %d", where, ops)
			assert.Empty(t, m.admitted(t, d.Spec.Template.Labels, c, 6379), "%s: a port it does not serve", where)
		}
		api := m.deployments["matching-api"]
		assert.Equal(t, []peer{{any: true}}, m.admitted(t, api.Spec.Template.Labels, m.container(t, "matching-api"), 8080), m.dir)
		for name, j := range m.jobs {
			assert.Empty(t, m.admitted(t, j.Spec.Template.Labels, j.Spec.Template.Spec.Containers[0], 8080), "%s: Job %s", m.dir, name)
		}
	}
}

// What kustomize builds runs one release of every image: a version tag
// (never latest) or a digest.
func TestImagesPinned(t *testing.T) {
	for _, m := range builds(t) {
		for name, spec := range m.podSpecs() {
			for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
				assert.True(t, pinned(c.Image), "deploy/%s: %s runs %s, which names no exact version", m.dir, name, c.Image)
			}
		}
	}
}

// absentAlerts maps each binary to the series its absent() alert watches:
// one every replica of it exports from its start, which no other binary
// exports (docs/metrics.md's "exported by" column).
func absentAlerts(t *testing.T, groups *rulefmt.RuleGroups) map[string]string {
	t.Helper()
	doc := testutil.MetricsDoc(t)
	out := map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			expr, err := promql.ParseExpr(r.Expr)
			require.NoError(t, err)
			call, ok := expr.(*parser.Call)
			if !ok || call.Func.Name != "absent" {
				continue
			}
			vs, ok := call.Args[0].(*parser.VectorSelector)
			if !assert.True(t, ok, "%s: absent() of a selector", r.Alert) {
				continue
			}
			d := doc[vs.Name]
			assert.Len(t, d.Binaries, 1, "%s: %s is exported by one binary", r.Alert, vs.Name)
			assert.Empty(t, d.Labels, "%s: %s has no labels, so it exists from the replica's start", r.Alert, vs.Name)
			for _, b := range d.Binaries {
				out[b] = vs.Name
			}
		}
	}
	return out
}

// Each binary has an alert for its absence: ratios go silent when nothing
// is scraped.
func assertAbsentAlerts(t *testing.T, groups *rulefmt.RuleGroups) {
	t.Helper()
	got := absentAlerts(t, groups)
	assert.ElementsMatch(t, []string{"api", "worker"}, slices.Collect(maps.Keys(got)), "an absent() alert per binary: %v", got)
}
