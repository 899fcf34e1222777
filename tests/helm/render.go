// Command helm-render renders a Helm chart the way `helm template` does, with the engine Helm
// uses: Go text/template, the sprig function library, and Helm's own functions (include, tpl,
// required, toYaml, fromYaml, toJson, fromJson, lookup). The fast chart suite renders with it;
// the e2e-real suite runs real Helm, built from source, and checks that both render the same.
//
//	helm-render --chart charts/spotshift [--name R] [--namespace NS] [-f values.yaml]...
//	            [--set a.b=c]... [--set-string a=b]... [--include-crds] [--notes]
//	            [--kube-version v1.29.0] [--api-versions monitoring.coreos.com/v1]...
//
// It prints the manifests as one YAML stream, each document headed by `# Source: CHART/PATH`,
// sorted in Helm's install order, or with --notes the rendered NOTES.txt. Errors go to stderr
// in Helm's words and the exit status is 1.
//
// What it follows from Helm 3: values.yaml coalesced with -f files and then --set (maps merge
// deeply, null deletes a key); numbers from YAML files are float64 (Helm reads values through
// JSON) and numbers from --set are int64; missing keys render as empty strings; files under
// templates/ whose names start with "_" define templates but render nothing; empty documents are
// dropped; CRDs from crds/ are printed first, unrendered; .Files.Get reads a file of the chart;
// hooks (helm test's pod) render as any template, as `helm template` prints them. Subcharts,
// .Files globbing and values.schema.json are not supported: the chart's schema is checked by real
// Helm in the e2e-real suite.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml "gopkg.in/yaml.v2"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// ---- values -------------------------------------------------------------------------------

// normalize turns what yaml.v2 decodes into what Helm's JSON round trip gives: string-keyed
// maps, []interface{} lists and float64 numbers.
func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = normalize(x)
		}
		return out
	case map[string]interface{}:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case []interface{}:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case uint64:
		return float64(t)
	}
	return v
}

func readValues(file string) (map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %v", file, err)
	}
	if raw == nil {
		return map[string]interface{}{}, nil
	}
	m, ok := normalize(raw).(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("failed to parse %s: the top level must be a map", file)
	}
	return m, nil
}

// coalesce merges src into dst: maps merge deeply, a null in src deletes the key.
func coalesce(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := v.(map[string]interface{}); ok {
			if dm, ok := dst[k].(map[string]interface{}); ok {
				dst[k] = coalesce(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

var intRE = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)

func typed(v string, asString bool) interface{} {
	if asString {
		return v
	}
	switch v {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if intRE.MatchString(v) {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return i
		}
	}
	return v
}

// splitUnescaped splits on sep outside braces, honouring backslash escapes.
func splitUnescaped(s string, sep byte) []string {
	var parts []string
	var cur strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			i++
		case c == '{':
			depth++
			cur.WriteByte(c)
		case c == '}':
			depth--
			cur.WriteByte(c)
		case c == sep && depth == 0:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, cur.String())
}

var indexRE = regexp.MustCompile(`^(.*)\[([0-9]+)\]$`)

// setPath applies one --set assignment: a.b.c=v, a.list[1]=v, a={x,y}.
func setPath(vals map[string]interface{}, expr string, asString bool) error {
	eq := strings.IndexByte(expr, '=')
	if eq <= 0 {
		return fmt.Errorf("failed parsing --set data: key %q has no value", expr)
	}
	key, raw := expr[:eq], expr[eq+1:]
	var value interface{}
	if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
		list := []interface{}{}
		if inner := raw[1 : len(raw)-1]; inner != "" {
			for _, item := range splitUnescaped(inner, ',') {
				list = append(list, typed(item, asString))
			}
		}
		value = list
	} else {
		value = typed(raw, asString)
	}
	parts := strings.Split(key, ".")
	cur := vals
	for i, part := range parts {
		last := i == len(parts)-1
		if m := indexRE.FindStringSubmatch(part); m != nil {
			idx, _ := strconv.Atoi(m[2])
			list, _ := cur[m[1]].([]interface{})
			for len(list) <= idx {
				list = append(list, nil)
			}
			cur[m[1]] = list
			if last {
				list[idx] = value
				return nil
			}
			next, ok := list[idx].(map[string]interface{})
			if !ok {
				next = map[string]interface{}{}
				list[idx] = next
			}
			cur = next
			continue
		}
		if last {
			if value == nil {
				delete(cur, part)
			} else {
				cur[part] = value
			}
			return nil
		}
		next, ok := cur[part].(map[string]interface{})
		if !ok {
			next = map[string]interface{}{}
			cur[part] = next
		}
		cur = next
	}
	return nil
}

// ---- the template engine ----------------------------------------------------------------

// Chart is .Chart: Chart.yaml's fields under Helm's Go names.
type Chart struct {
	APIVersion   string
	Name         string
	Version      string
	AppVersion   string
	Description  string
	Type         string
	KubeVersion  string
	Home         string
	Icon         string
	Keywords     []string
	Sources      []string
	Annotations  map[string]string
	Deprecated   bool
	Dependencies []interface{}
}

type chartFile struct {
	APIVersion  string            `yaml:"apiVersion"`
	Name        string            `yaml:"name"`
	Version     string            `yaml:"version"`
	AppVersion  string            `yaml:"appVersion"`
	Description string            `yaml:"description"`
	Type        string            `yaml:"type"`
	KubeVersion string            `yaml:"kubeVersion"`
	Home        string            `yaml:"home"`
	Icon        string            `yaml:"icon"`
	Keywords    []string          `yaml:"keywords"`
	Sources     []string          `yaml:"sources"`
	Annotations map[string]string `yaml:"annotations"`
	Deprecated  bool              `yaml:"deprecated"`
}

type KubeVersion struct{ Version, Major, Minor, GitVersion string }

func (k KubeVersion) String() string { return k.Version }

// Files is the chart's .Files: Get reads a file of the chart by its path in the chart, "" when
// there is none (as Helm's does).
type Files struct{ dir string }

func (f Files) Get(name string) string {
	b, err := os.ReadFile(filepath.Join(f.dir, filepath.FromSlash(name)))
	if err != nil {
		return ""
	}
	return string(b)
}

type APIVersions []string

// Has reports whether a group/version (or group/version/Kind) is served.
func (a APIVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions APIVersions
}

type Release struct {
	Name, Namespace, Service string
	IsInstall, IsUpgrade     bool
	Revision                 int
}

func toYAML(v interface{}) string {
	// Through JSON first, as Helm (sigs.k8s.io/yaml) does, so structs and maps look alike.
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	var generic interface{}
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return ""
	}
	out, err := yaml.Marshal(generic)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(out), "\n")
}

func fromYAML(s string) map[string]interface{} {
	var raw interface{}
	if err := yaml.Unmarshal([]byte(s), &raw); err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	m, _ := normalize(raw).(map[string]interface{})
	if m == nil {
		m = map[string]interface{}{}
	}
	return m
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

const recursionLimit = 1000

func newEngine() *template.Template {
	t := template.New("gotpl").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env") // Helm removes these two: charts must not read the renderer's environment
	delete(funcs, "expandenv")
	includeDepth := map[string]int{}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		if includeDepth[name] > recursionLimit {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		includeDepth[name]++
		defer func() { includeDepth[name]-- }()
		var buf bytes.Buffer
		err := t.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		clone, err := t.Clone()
		if err != nil {
			return "", err
		}
		parsed, err := clone.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %v", text, err)
		}
		var buf bytes.Buffer
		if err := parsed.Execute(&buf, data); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %v", text, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, fmt.Errorf("%s", msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["toJson"] = toJSON
	funcs["fromJson"] = fromJSON
	// No cluster to look objects up in: `helm template` answers an empty map too.
	funcs["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	t.Funcs(funcs)
	return t
}

// Helm's cleaned-up error: "execution error at (chart/templates/x.yaml:3:4): message".
var execErrRE = regexp.MustCompile(`template: ([^:]+:[0-9]+:[0-9]+): executing "[^"]*" at <[^>]*>: error calling (?:required|fail): (.*)`)

func cleanError(err error) error {
	if m := execErrRE.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("execution error at (%s): %s", m[1], m[2])
	}
	return err
}

// ---- manifests ------------------------------------------------------------------------------

// Helm's install order (pkg/releaseutil/kind_sorter.go); unknown kinds go last.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
	"ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
	"RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

var kindRE = regexp.MustCompile(`(?m)^kind:\s*["']?([A-Za-z0-9]+)`)

type manifest struct {
	source, content, kind string
	order                 int
}

func kindRank(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}

var docSepRE = regexp.MustCompile(`(?m)^---[ \t]*$`)

func splitDocuments(source, text string) ([]manifest, error) {
	var out []manifest
	for _, doc := range docSepRE.Split(text, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var check interface{}
		if err := yaml.Unmarshal([]byte(doc), &check); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %v", source, err)
		}
		if check == nil { // only comments
			continue
		}
		kind := ""
		if m := kindRE.FindStringSubmatch(doc); m != nil {
			kind = m[1]
		}
		out = append(out, manifest{source: source, content: strings.Trim(doc, "\n"), kind: kind, order: len(out)})
	}
	return out, nil
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "Error: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	var valueFiles, sets, setStrings, apiVersions multiFlag
	chartDir := flag.String("chart", "", "the chart's directory")
	name := flag.String("name", "release-name", "the release name")
	namespace := flag.String("namespace", "default", "the release namespace")
	includeCRDs := flag.Bool("include-crds", false, "print the chart's crds/ first")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt instead of the manifests")
	upgrade := flag.Bool("upgrade", false, "render as an upgrade (.Release.IsUpgrade)")
	kubeVersion := flag.String("kube-version", "v1.29.0", "the Kubernetes version in .Capabilities")
	flag.Var(&valueFiles, "f", "a values file (repeatable)")
	flag.Var(&valueFiles, "values", "a values file (repeatable)")
	flag.Var(&sets, "set", "key=value (repeatable)")
	flag.Var(&setStrings, "set-string", "key=value kept a string (repeatable)")
	flag.Var(&apiVersions, "api-versions", "an API version the cluster serves (repeatable)")
	flag.Parse()
	if *chartDir == "" {
		fail("--chart is required")
	}

	var cf chartFile
	data, err := os.ReadFile(filepath.Join(*chartDir, "Chart.yaml"))
	if err != nil {
		fail("%v", err)
	}
	if err := yaml.UnmarshalStrict(data, &cf); err != nil {
		fail("Chart.yaml: %v", err)
	}
	if cf.APIVersion != "v2" || cf.Name == "" || cf.Version == "" {
		fail("Chart.yaml: apiVersion v2, name and version are required")
	}
	chart := Chart{APIVersion: cf.APIVersion, Name: cf.Name, Version: cf.Version, AppVersion: cf.AppVersion,
		Description: cf.Description, Type: cf.Type, KubeVersion: cf.KubeVersion, Home: cf.Home, Icon: cf.Icon,
		Keywords: cf.Keywords, Sources: cf.Sources, Annotations: cf.Annotations, Deprecated: cf.Deprecated}

	vals, err := readValues(filepath.Join(*chartDir, "values.yaml"))
	if err != nil {
		fail("%v", err)
	}
	for _, f := range valueFiles {
		user, err := readValues(f)
		if err != nil {
			fail("%v", err)
		}
		vals = coalesce(vals, user)
	}
	for _, s := range sets {
		for _, expr := range splitUnescaped(s, ',') {
			if err := setPath(vals, expr, false); err != nil {
				fail("%v", err)
			}
		}
	}
	for _, s := range setStrings {
		for _, expr := range splitUnescaped(s, ',') {
			if err := setPath(vals, expr, true); err != nil {
				fail("%v", err)
			}
		}
	}

	kv := strings.TrimPrefix(*kubeVersion, "v")
	parts := strings.SplitN(kv, ".", 3)
	if len(parts) < 2 {
		fail("--kube-version %q is not a version such as v1.29.0", *kubeVersion)
	}
	caps := Capabilities{
		KubeVersion: KubeVersion{Version: "v" + kv, Major: parts[0], Minor: parts[1], GitVersion: "v" + kv},
		APIVersions: append(APIVersions{"v1", "apps/v1", "policy/v1", "rbac.authorization.k8s.io/v1",
			"coordination.k8s.io/v1", "events.k8s.io/v1", "apiextensions.k8s.io/v1"}, apiVersions...),
	}
	release := Release{Name: *name, Namespace: *namespace, Service: "Helm", IsInstall: !*upgrade, IsUpgrade: *upgrade, Revision: 1}

	// Parse every template into one set, so `define`s are shared.
	engine := newEngine()
	var sources []string
	templatesDir := filepath.Join(*chartDir, "templates")
	err = filepath.Walk(templatesDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(*chartDir, p)
		tname := path.Join(chart.Name, filepath.ToSlash(rel))
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := engine.New(tname).Parse(string(text)); err != nil {
			return fmt.Errorf("parse error at (%s", strings.TrimPrefix(err.Error(), "template: "))
		}
		sources = append(sources, tname)
		return nil
	})
	if err != nil {
		fail("%v", err)
	}
	sort.Strings(sources)

	top := func(tname string) map[string]interface{} {
		return map[string]interface{}{
			"Values":       vals,
			"Release":      release,
			"Chart":        chart,
			"Capabilities": caps,
			"Files":        Files{dir: *chartDir},
			"Template":     map[string]interface{}{"Name": tname, "BasePath": path.Join(chart.Name, "templates")},
		}
	}
	renderOne := func(tname string) string {
		var buf bytes.Buffer
		if err := engine.ExecuteTemplate(&buf, tname, top(tname)); err != nil {
			fail("%v", cleanError(err))
		}
		return strings.ReplaceAll(buf.String(), "<no value>", "")
	}

	if *notes {
		notesName := path.Join(chart.Name, "templates", "NOTES.txt")
		if engine.Lookup(notesName) == nil {
			fail("the chart has no templates/NOTES.txt")
		}
		fmt.Print(renderOne(notesName))
		return
	}

	var out bytes.Buffer
	if *includeCRDs {
		crds, _ := filepath.Glob(filepath.Join(*chartDir, "crds", "*.yaml"))
		sort.Strings(crds)
		for _, c := range crds {
			text, err := os.ReadFile(c)
			if err != nil {
				fail("%v", err)
			}
			fmt.Fprintf(&out, "---\n# Source: %s/crds/%s\n%s\n", chart.Name, filepath.Base(c), strings.TrimRight(string(text), "\n"))
		}
	}
	var manifests []manifest
	for _, tname := range sources {
		base := path.Base(tname)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		docs, err := splitDocuments(tname, renderOne(tname))
		if err != nil {
			fail("%v", err)
		}
		manifests = append(manifests, docs...)
	}
	sort.SliceStable(manifests, func(i, j int) bool {
		return kindRank(manifests[i].kind) < kindRank(manifests[j].kind)
	})
	for _, m := range manifests {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", m.source, m.content)
	}
	os.Stdout.Write(out.Bytes())
}
