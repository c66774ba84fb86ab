package agent

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/vidfarm/vidfarm/scheduler"
)

// TestGPUNodeExample checks deploy/gpu-node: its runners file passes the
// agent's validator and builds every runner; compose.yaml and
// kubernetes.yaml (parsed as YAML: docker and kubectl are not here) run a
// server under every host name and port the runners file uses, the agent
// with the runners file and workflows mounted where the file expects them.
func TestGPUNodeExample(t *testing.T) {
	dir := "../deploy/gpu-node"
	specs, err := LoadRunnersFile(filepath.Join(dir, "runners.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if kinds, want := specKinds(specs), []string{RunnerComfyUI, RunnerCog, RunnerOpenAIChat, RunnerOpenAISpeech}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	if _, err := newLiveRunners(specs, []scheduler.GPU{{ID: "0", MemoryTotalGB: 80}}, runnerDeps{log: slog.Default()}); err != nil {
		t.Fatalf("the runners do not build: %v", err)
	}
	hosts := map[string]string{} // host → port of the runners' URLs
	for _, s := range specs {
		u, err := url.Parse(s.URL)
		if err != nil || u.Port() == "" {
			t.Fatalf("runner %s: URL %q without a port", s.Name, s.URL)
		}
		hosts[u.Hostname()] = u.Port()
	}
	workflows := map[string]bool{}
	for _, s := range specs {
		if s.Workflow != "" {
			rel, err := filepath.Rel(filepath.Dir(mustAbs(t, filepath.Join(dir, "runners.yaml"))), s.Workflow)
			if err != nil {
				t.Fatal(err)
			}
			workflows[rel] = true
		}
	}

	t.Run("compose", func(t *testing.T) {
		var compose struct {
			Services map[string]struct {
				Image   string   `yaml:"image"`
				Build   string   `yaml:"build"`
				Command []string `yaml:"command"`
				Expose  []string `yaml:"expose"`
				Volumes []string `yaml:"volumes"`
				Deploy  struct {
					Resources struct {
						Reservations struct {
							Devices []map[string]any `yaml:"devices"`
						} `yaml:"reservations"`
					} `yaml:"resources"`
				} `yaml:"deploy"`
			} `yaml:"services"`
			Volumes map[string]any `yaml:"volumes"`
		}
		decodeYAML(t, filepath.Join(dir, "compose.yaml"), &compose)
		for host, port := range hosts {
			svc, ok := compose.Services[host]
			if !ok {
				t.Errorf("no service %q, which runners.yaml names", host)
				continue
			}
			if !slices.Contains(svc.Expose, port) {
				t.Errorf("service %s exposes %v, runners.yaml calls port %s", host, svc.Expose, port)
			}
		}
		for name, svc := range compose.Services {
			if svc.Image == "" {
				t.Errorf("service %s has no image", name)
			}
			if svc.Build != "" {
				if _, err := os.Stat(filepath.Join(dir, svc.Build, "Dockerfile")); err != nil {
					t.Errorf("service %s builds %s: %v", name, svc.Build, err)
				}
			}
			if len(svc.Deploy.Resources.Reservations.Devices) == 0 {
				t.Errorf("service %s reserves no GPU", name)
			}
			for _, v := range svc.Volumes {
				src, _, _ := strings.Cut(v, ":")
				if _, named := compose.Volumes[src]; !named && !strings.HasPrefix(src, "./") {
					t.Errorf("service %s mounts %q, neither a named volume nor a path here", name, src)
				}
			}
		}
		agent := compose.Services["agent"]
		if !slices.Contains(agent.Command, "/etc/vidfarm/runners.yaml") ||
			!slices.Contains(agent.Volumes, "./runners.yaml:/etc/vidfarm/runners.yaml:ro") ||
			!slices.Contains(agent.Volumes, "./workflows:/etc/vidfarm/workflows:ro") {
			t.Errorf("the agent does not run with the runners file and workflows at /etc/vidfarm: %v %v", agent.Command, agent.Volumes)
		}
	})

	t.Run("kubernetes", func(t *testing.T) {
		var dep struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						HostAliases []struct {
							IP        string   `yaml:"ip"`
							Hostnames []string `yaml:"hostnames"`
						} `yaml:"hostAliases"`
						Containers []struct {
							Name  string   `yaml:"name"`
							Image string   `yaml:"image"`
							Args  []string `yaml:"args"`
							Ports []struct {
								ContainerPort int `yaml:"containerPort"`
							} `yaml:"ports"`
						} `yaml:"containers"`
						Volumes []struct {
							Name      string `yaml:"name"`
							ConfigMap struct {
								Items []struct {
									Key  string `yaml:"key"`
									Path string `yaml:"path"`
								} `yaml:"items"`
							} `yaml:"configMap"`
						} `yaml:"volumes"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		decodeYAML(t, filepath.Join(dir, "kubernetes.yaml"), &dep)
		pod := dep.Spec.Template.Spec
		if dep.Kind != "Deployment" || len(pod.HostAliases) != 1 || pod.HostAliases[0].IP != "127.0.0.1" {
			t.Fatalf("want a Deployment whose pod maps the servers' names to 127.0.0.1: %+v", dep)
		}
		ports := map[string]bool{}
		for _, c := range pod.Containers {
			if c.Image == "" {
				t.Errorf("container %s has no image", c.Name)
			}
			for _, p := range c.Ports {
				ports[strconv.Itoa(p.ContainerPort)] = true
			}
		}
		for host, port := range hosts {
			if !slices.Contains(pod.HostAliases[0].Hostnames, host) {
				t.Errorf("host %s of runners.yaml is not a host alias of the pod", host)
			}
			if !ports[port] {
				t.Errorf("no container of the pod listens on %s (%s)", port, host)
			}
		}
		mounted := map[string]bool{}
		for _, v := range pod.Volumes {
			for _, it := range v.ConfigMap.Items {
				mounted[it.Path] = it.Key == filepath.Base(it.Path)
			}
		}
		for _, want := range append([]string{"runners.yaml"}, keys(workflows)...) {
			if !mounted[want] {
				t.Errorf("the ConfigMap does not put %s beside the runners file", want)
			}
		}
	})
}

// specKinds is the kind of each spec, in order.
func specKinds(specs []RunnerSpec) []string {
	var kinds []string
	for _, s := range specs {
		kinds = append(kinds, s.Kind)
	}
	return kinds
}

func decodeYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: more than one document (%v)", path, err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
