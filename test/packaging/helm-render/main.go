// helm-render: `helm template` for the tests, on a machine without Helm. It is Helm's own engine in the parts that
// decide what a chart renders: Go's text/template with the sprig functions (the libraries Helm links), Helm's extra
// functions (include, tpl, required, toYaml and fromYaml through sigs.k8s.io/yaml, lookup answering nothing), values
// coalesced as Helm does (a chart's values.yaml under the user's, a dependency's under the parent's key of its name,
// null deleting a default, globals passed down), missingkey=zero with "<no value>" removed, and subcharts from
// charts/. It prints JSON: the manifests by source file and each chart's final values (for values.schema.json).
//
//	helm-render CHART_DIR RELEASE NAMESPACE VALUES_JSON_FILE
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

type values = map[string]interface{}

type chart struct {
	name     string
	dir      string
	meta     values
	defaults values
	subs     []*chart
}

func loadChart(dir string) (*chart, error) {
	meta := values{}
	if err := readYaml(filepath.Join(dir, "Chart.yaml"), &meta); err != nil {
		return nil, err
	}
	defaults := values{}
	if _, err := os.Stat(filepath.Join(dir, "values.yaml")); err == nil {
		if err := readYaml(filepath.Join(dir, "values.yaml"), &defaults); err != nil {
			return nil, err
		}
	}
	c := &chart{name: meta["name"].(string), dir: dir, meta: meta, defaults: defaults}
	entries, _ := os.ReadDir(filepath.Join(dir, "charts"))
	for _, entry := range entries {
		sub, err := loadChart(filepath.Join(dir, "charts", entry.Name()))
		if err != nil {
			return nil, err
		}
		c.subs = append(c.subs, sub)
	}
	return c, nil
}

func readYaml(path string, into interface{}) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// coalesce: dst (the user's or the parent's) wins over src (defaults); a null in dst deletes the default.
func coalesce(dst, src values) values {
	out := values{}
	for k, v := range src {
		out[k] = v
	}
	for k, v := range dst {
		if v == nil {
			delete(out, k)
			continue
		}
		dm, dok := v.(map[string]interface{})
		sm, sok := out[k].(map[string]interface{})
		if dok && sok {
			out[k] = coalesce(dm, sm)
		} else {
			out[k] = v
		}
	}
	return out
}

// resolve: the chart's final values, its dependencies' merged in under their names (the parent sees them too).
func resolve(c *chart, user values, globals values) values {
	v := coalesce(user, c.defaults)
	g, _ := v["global"].(map[string]interface{})
	g = coalesce(globals, g)
	v["global"] = g
	for _, sub := range c.subs {
		given, _ := v[sub.name].(map[string]interface{})
		v[sub.name] = resolve(sub, given, g)
	}
	return v
}

type files map[string][]byte

func (f files) Get(name string) string      { return string(f[name]) }
func (f files) GetBytes(name string) []byte { return f[name] }

func readFiles(dir string) files {
	f := files{}
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			if !strings.HasPrefix(rel, "templates/") && !strings.HasPrefix(rel, "charts/") {
				f[rel], _ = os.ReadFile(path)
			}
		}
		return nil
	})
	return f
}

func chartMeta(meta values) values {
	out := values{}
	for k, v := range meta {
		out[strings.ToUpper(k[:1])+k[1:]] = v
	}
	return out
}

type job struct {
	name string
	data values
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: helm-render CHART_DIR RELEASE NAMESPACE VALUES_JSON_FILE")
		os.Exit(2)
	}
	root, err := loadChart(os.Args[1])
	check(err)
	user := values{}
	raw, err := os.ReadFile(os.Args[4])
	check(err)
	check(json.Unmarshal(raw, &user))
	final := resolve(root, user, values{})
	release := values{"Name": os.Args[2], "Namespace": os.Args[3], "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1}
	capabilities := values{"KubeVersion": values{"Version": "v1.31.0", "Major": "1", "Minor": "31", "GitVersion": "v1.31.0"}}

	t := template.New("gotpl").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	includes := map[string]int{}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		includes[name]++
		defer func() { includes[name]-- }()
		if includes[name] > 1000 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
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
			return "", err
		}
		var buf bytes.Buffer
		err = parsed.Execute(&buf, data)
		return strings.ReplaceAll(buf.String(), "<no value>", ""), err
	}
	funcs["required"] = func(message string, value interface{}) (interface{}, error) {
		if value == nil || value == "" {
			return nil, fmt.Errorf("%s", message)
		}
		return value, nil
	}
	funcs["toYaml"] = func(v interface{}) string {
		data, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(data), "\n")
	}
	funcs["fromYaml"] = func(text string) values {
		m := values{}
		if err := yaml.Unmarshal([]byte(text), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["toJson"] = func(v interface{}) string {
		data, _ := json.Marshal(v)
		return string(data)
	}
	funcs["fromJson"] = func(text string) values {
		m := values{}
		if err := json.Unmarshal([]byte(text), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	funcs["lookup"] = func(string, string, string, string) (values, error) { return values{}, nil }
	t.Funcs(funcs)

	var jobs []job
	chartValues := map[string]values{}
	var walk func(c *chart, v values, path string)
	walk = func(c *chart, v values, path string) {
		chartValues[path] = v
		var names []string
		_ = filepath.Walk(filepath.Join(c.dir, "templates"), func(file string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				rel, _ := filepath.Rel(c.dir, file)
				names = append(names, rel)
			}
			return nil
		})
		for _, rel := range names {
			name := path + "/" + rel
			text, err := os.ReadFile(filepath.Join(c.dir, rel))
			check(err)
			_, err = t.New(name).Parse(string(text))
			check(err)
			base := filepath.Base(rel)
			if strings.HasPrefix(base, "_") || (base == "NOTES.txt" && path != root.name) {
				continue // Helm prints the top chart's notes only
			}
			jobs = append(jobs, job{name, values{
				"Values": v, "Release": release, "Chart": chartMeta(c.meta), "Capabilities": capabilities,
				"Files": readFiles(c.dir), "Template": values{"Name": name, "BasePath": path + "/templates"},
			}})
		}
		for _, sub := range c.subs {
			walk(sub, v[sub.name].(map[string]interface{}), path+"/charts/"+sub.name)
		}
	}
	walk(root, final, root.name)

	type manifest struct {
		Source  string `json:"source"`
		Content string `json:"content"`
	}
	out := struct {
		Manifests []manifest        `json:"manifests"`
		Notes     string            `json:"notes"`
		Values    map[string]values `json:"values"`
	}{Values: chartValues}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].name < jobs[j].name })
	for _, j := range jobs {
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, j.name, j.data); err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.HasSuffix(j.name, "/NOTES.txt") {
			out.Notes = text
		} else if strings.TrimSpace(text) != "" {
			out.Manifests = append(out.Manifests, manifest{j.name, text})
		}
	}
	check(json.NewEncoder(os.Stdout).Encode(out))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
