package agent

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vidfarm/vidfarm/models"
	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

var (
	runnerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// runner reads one entry of runners; its mistakes go to p.
func (p *fileProblems) runner(n *yaml.Node, path, dir string) RunnerSpec {
	s := RunnerSpec{Where: fmt.Sprintf("%s:%d", p.file, n.Line), Concurrency: DefaultRunnerConcurrency, HealthInterval: DefaultRunnerHealthInterval,
		UnhealthyAfter: DefaultRunnerUnhealthyAfter}
	if n.Kind != yaml.MappingNode {
		p.add(n, path, "want a mapping (name, kind, url, models, ...)")
		return s
	}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		fields[n.Content[i].Value] = n.Content[i+1]
	}
	// The kind first: it decides which fields are allowed.
	if v := fields["kind"]; v == nil {
		p.add(n, path+".kind", "missing: one of %s", kindList())
	} else if _, ok := runnerKinds[v.Value]; !ok || v.Kind != yaml.ScalarNode {
		p.add(v, path+".kind", "%q is not a kind: one of %s", v.Value, kindList())
	} else {
		s.Kind = v.Value
	}
	kind, known := runnerKinds[s.Kind]
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		switch key := k.Value; {
		case slices.Contains(commonFields, key) || slices.Contains(kind.fields, key):
		case !isField(key):
			p.add(k, path+"."+key, "unknown field")
		case known:
			p.add(k, path+"."+key, "not a field of kind %s", s.Kind)
			// with an unknown kind, only the kind's mistake is reported
		}
	}
	at := func(f string) string { return path + "." + f }
	if v := fields["name"]; v == nil {
		p.add(n, at("name"), "missing: every runner needs a unique name")
	} else if p.str(v, at("name"), &s.Name) && !runnerNameRE.MatchString(s.Name) {
		p.add(v, at("name"), "%q: want 1 to 64 of A-Z a-z 0-9 . _ -, starting with a letter or digit", s.Name)
	}
	if v := fields["models"]; v != nil && p.strs(v, at("models"), &s.Models) {
		if known && !kind.models {
			p.add(v, at("models"), "kind %s renders no catalog models; use stages", s.Kind)
		}
		for i, m := range s.Models {
			if _, ok := models.Get(m); !ok {
				p.add(v.Content[i], fmt.Sprintf("%s[%d]", at("models"), i), "%q is not a catalog model (see GET /v1/models)", m)
			}
		}
	}
	if v := fields["stages"]; v != nil && p.strs(v, at("stages"), &s.Stages) {
		for i, st := range s.Stages {
			if known && !slices.Contains(kind.stages, st) {
				p.add(v.Content[i], fmt.Sprintf("%s[%d]", at("stages"), i), "kind %s cannot serve stage %q (%s)", s.Kind, st, stageHelp)
			}
		}
	}
	if known && len(s.Models) == 0 && len(s.Stages) == 0 {
		p.add(n, path, "runner %q serves nothing: give it models or stages", s.Name)
	}
	if v := fields["gpu_memory_gb"]; v != nil && v.Decode(&s.GPUMemoryGB) != nil {
		p.add(v, at("gpu_memory_gb"), "%q is not a number", v.Value)
	} else if v != nil && (s.GPUMemoryGB <= 0 || math.IsInf(s.GPUMemoryGB, 0) || math.IsNaN(s.GPUMemoryGB)) {
		p.add(v, at("gpu_memory_gb"), "must be > 0")
	}
	if v := fields["concurrency"]; v != nil && (v.Decode(&s.Concurrency) != nil || s.Concurrency < 1) {
		p.add(v, at("concurrency"), "%q: want a whole number >= 1", v.Value)
	}
	p.duration(fields["timeout"], at("timeout"), &s.Timeout, time.Second)
	p.duration(fields["health_interval"], at("health_interval"), &s.HealthInterval, minHealthInterval)
	if v := fields["unhealthy_after"]; v != nil && (v.Decode(&s.UnhealthyAfter) != nil || s.UnhealthyAfter < 1 || s.UnhealthyAfter > 100) {
		p.add(v, at("unhealthy_after"), "%q: want a whole number of failed checks in a row, 1 to 100", v.Value)
	}
	if !known {
		return s
	}
	p.address(n, &s, fields, path, dir)
	if v := fields["inputs"]; v != nil {
		s.Inputs = p.inputs(v, at("inputs"), slices.Contains(s.Stages, StageAvatar))
	} else if s.Kind == RunnerCog {
		p.add(n, at("inputs"), "missing: map at least prompt to the model's input name")
	}
	if v := fields["inputs"]; v != nil && s.Kind == RunnerCog && slices.Contains(s.Stages, StageAvatar) {
		for _, f := range []string{FieldAudio, FieldPortrait} {
			if _, ok := s.Inputs[f]; !ok {
				p.add(v, at("inputs"), "an avatar runner needs %s (the %s) mapped to the model's input name", f, avatarFieldHelp[f])
			}
		}
	}
	if v := fields["output_node"]; v != nil {
		p.str(v, at("output_node"), &s.OutputNode)
	}
	if v := fields["voices"]; v != nil {
		s.Voices = p.voices(v, at("voices"))
	}
	return s
}

const stageHelp = "plan: openai-chat; tts: openai-speech; avatar: cog or comfyui"

func kindList() string {
	return strings.Join([]string{RunnerCog, RunnerComfyUI, RunnerOpenAIChat, RunnerOpenAISpeech, RunnerCommand, RunnerHTTP}, ", ")
}

// isField reports whether key is a field of some kind.
func isField(key string) bool {
	for _, k := range runnerKinds {
		if slices.Contains(k.fields, key) {
			return true
		}
	}
	return false
}

// address reads where the runner is: url or command, the workflow, the
// server's model and its API key.
func (p *fileProblems) address(n *yaml.Node, s *RunnerSpec, fields map[string]*yaml.Node, path, dir string) {
	at := func(f string) string { return path + "." + f }
	if s.Kind == RunnerCommand {
		if v := fields["command"]; v == nil {
			p.add(n, at("command"), "missing: the program and its arguments, e.g. [/opt/runners/wan.sh, --fast]")
		} else if p.strs(v, at("command"), &s.Command) {
			if len(s.Command) == 0 || s.Command[0] == "" {
				p.add(v, at("command"), "empty: the program and its arguments")
			} else if prog, err := checkProgram(s.Command[0], dir); err != nil {
				p.add(v, at("command"), "%s: %v", prog, err)
			} else {
				s.Command[0] = prog
			}
		}
	} else if v := fields["url"]; v == nil {
		p.add(n, at("url"), "missing: the server's base URL, e.g. http://127.0.0.1:5000")
	} else if p.str(v, at("url"), &s.URL) && !pipeline.IsRunnerURL(s.URL) {
		p.add(v, at("url"), "%q is not an http(s) URL with a host", s.URL)
	}
	if v := fields["health_url"]; v != nil && s.Kind == RunnerHTTP && p.str(v, at("health_url"), &s.HealthURL) && !pipeline.IsRunnerURL(s.HealthURL) {
		p.add(v, at("health_url"), "%q is not an http(s) URL with a host", s.HealthURL)
	}
	if s.Kind == RunnerComfyUI {
		if v := fields["workflow"]; v == nil {
			p.add(n, at("workflow"), "missing: the ComfyUI workflow in API format (a .json file)")
		} else if p.str(v, at("workflow"), &s.Workflow) {
			if !filepath.IsAbs(s.Workflow) {
				s.Workflow = filepath.Join(dir, s.Workflow)
			}
			if st, err := os.Stat(s.Workflow); err != nil || st.IsDir() {
				p.add(v, at("workflow"), "%s: not a readable file", s.Workflow)
			} else {
				p.workflow(v, at("workflow"), s, fields["output_node"])
			}
		}
	}
	if s.Kind == RunnerOpenAIChat || s.Kind == RunnerOpenAISpeech {
		if v := fields["model"]; v == nil {
			p.add(n, at("model"), "missing: the server's model name")
		} else {
			p.str(v, at("model"), &s.Model)
		}
		if v := fields["api_key_env"]; v != nil && p.str(v, at("api_key_env"), &s.APIKeyEnv) {
			if !envNameRE.MatchString(s.APIKeyEnv) {
				p.add(v, at("api_key_env"), "%q is not an environment variable name", s.APIKeyEnv)
			} else if os.Getenv(s.APIKeyEnv) == "" {
				p.add(v, at("api_key_env"), "environment variable %s is not set (or empty)", s.APIKeyEnv)
			}
		}
	}
}

// workflow checks a comfyui runner's workflow: ComfyUI's API format with
// known placeholders (pipeline.LoadComfyWorkflow), output_node one of its
// nodes, and for an avatar runner the audio and portrait placeholders.
func (p *fileProblems) workflow(v *yaml.Node, path string, s *RunnerSpec, outputNode *yaml.Node) {
	wf, err := pipeline.LoadComfyWorkflow(s.Workflow)
	if err != nil {
		p.add(v, path, "%v", err)
		return
	}
	if outputNode != nil && !wf.HasNode(outputNode.Value) {
		p.add(outputNode, strings.TrimSuffix(path, "workflow")+"output_node", "%q is not a node of %s", outputNode.Value, filepath.Base(s.Workflow))
	}
	if slices.Contains(s.Stages, StageAvatar) {
		for _, f := range []string{FieldAudio, FieldPortrait} {
			if !slices.Contains(wf.Fields(), f) {
				p.add(v, path, "an avatar workflow needs the placeholder \"{{%s}}\" (the %s); %s has none", f, avatarFieldHelp[f], filepath.Base(s.Workflow))
			}
		}
	}
}

// avatarFieldHelp says what each avatar input is.
var avatarFieldHelp = map[string]string{FieldAudio: "narration WAV", FieldPortrait: "avatar picture"}

// inputs reads the field → input name map.
func (p *fileProblems) inputs(v *yaml.Node, path string, avatar bool) map[string]string {
	if v.Kind != yaml.MappingNode {
		p.add(v, path, "want a mapping of request field to the server's input name")
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		at := path + "." + k.Value
		switch {
		case !slices.Contains(InputFields(), k.Value):
			p.add(k, at, "not a request field: one of %s", strings.Join(InputFields(), ", "))
		case (k.Value == FieldAudio || k.Value == FieldPortrait) && !avatar:
			p.add(k, at, "an avatar input: only for a runner with stages: [avatar]")
		default:
			var name string
			if p.str(val, at, &name) {
				out[k.Value] = name
			}
		}
	}
	return out
}

// voices reads openai-speech's voices.
func (p *fileProblems) voices(v *yaml.Node, path string) []wire.Voice {
	if v.Kind != yaml.SequenceNode {
		p.add(v, path, "want a list of {id, name, language, gender}")
		return nil
	}
	var out []wire.Voice
	seen := map[string]bool{}
	for i, n := range v.Content {
		at := fmt.Sprintf("%s[%d]", path, i)
		var voice wire.Voice
		if n.Kind != yaml.MappingNode {
			p.add(n, at, "want {id, name, language, gender}")
			continue
		}
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, val := n.Content[j], n.Content[j+1]
			dst := map[string]*string{"id": &voice.ID, "name": &voice.Name, "language": &voice.Language, "gender": &voice.Gender}[k.Value]
			if dst == nil {
				p.add(k, at+"."+k.Value, "unknown field (a voice has id, name, language, gender)")
				continue
			}
			p.str(val, at+"."+k.Value, dst)
		}
		if err := voice.Check(); err != nil {
			p.add(n, at, "%v", err)
		} else if seen[voice.ID] {
			p.add(n, at, "voice id %q given twice", voice.ID)
		}
		seen[voice.ID] = true
		out = append(out, voice)
	}
	return out
}

// str decodes a non-empty string scalar.
func (p *fileProblems) str(v *yaml.Node, path string, dst *string) bool {
	if v.Kind != yaml.ScalarNode || v.Decode(dst) != nil || strings.TrimSpace(*dst) == "" {
		p.add(v, path, "want a non-empty string")
		return false
	}
	return true
}

// strs decodes a list of non-empty strings.
func (p *fileProblems) strs(v *yaml.Node, path string, dst *[]string) bool {
	if v.Kind != yaml.SequenceNode {
		p.add(v, path, "want a list, e.g. [a, b]")
		return false
	}
	ok := true
	for i, n := range v.Content {
		var s string
		if !p.str(n, fmt.Sprintf("%s[%d]", path, i), &s) {
			ok = false
		}
		*dst = append(*dst, s)
	}
	return ok
}

// duration decodes a Go duration such as "30m" of at least least.
func (p *fileProblems) duration(v *yaml.Node, path string, dst *time.Duration, least time.Duration) {
	if v == nil {
		return
	}
	d, err := time.ParseDuration(v.Value)
	switch {
	case v.Kind != yaml.ScalarNode || err != nil:
		p.add(v, path, "%q is not a duration: write e.g. 30m, 10s, 1h30m", v.Value)
	case d < least:
		p.add(v, path, "%s: want at least %s", d, least)
	default:
		*dst = d
	}
}
