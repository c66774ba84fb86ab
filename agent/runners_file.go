package agent

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vidfarm/vidfarm/pipeline"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// Kinds of runner (the runners file's "kind").
const (
	RunnerCog          = "cog"           // a Cog container (pipeline.CogRunner)
	RunnerComfyUI      = "comfyui"       // a ComfyUI server and an API-format workflow
	RunnerOpenAIChat   = "openai-chat"   // /v1/chat/completions, for the plan stage
	RunnerOpenAISpeech = "openai-speech" // /v1/audio/speech, for the tts stage
	RunnerCommand      = "command"       // the external runner protocol over stdin (pipeline.ExternalRunner)
	RunnerHTTP         = "http"          // the external runner protocol over HTTP (pipeline.HTTPRunner)
)

// Stages a runner may serve besides rendering catalog models.
const (
	StagePlan   = "plan"
	StageTTS    = "tts"
	StageAvatar = "avatar"
)

// Avatar input fields, besides pipeline.CogFields.
const (
	FieldAudio    = "audio"    // the narration WAV
	FieldPortrait = "portrait" // the avatar picture
)

// Defaults of a runner of the runners file.
const (
	DefaultRunnerConcurrency    = 1
	DefaultRunnerHealthInterval = 10 * time.Second
	DefaultRunnerUnhealthyAfter = 2
	minHealthInterval           = 100 * time.Millisecond
)

// RunnerSpec is one runner: an entry of the runners file
// (LoadRunnersFile), or a --runner spec (kind command or http). Its shape
// is deploy/runners.example.yaml's.
type RunnerSpec struct {
	Name        string
	Kind        string
	URL         string   // every kind but command
	Command     []string // command: program (absolute once loaded) and arguments
	Models      []string // catalog model ids it renders
	Stages      []string // StagePlan, StageTTS, StageAvatar
	GPUMemoryGB float64  // 0: the catalog's figure for the model
	// Concurrency is how many tasks it takes at once; 0 means no limit
	// (a --runner spec, as before the runners file).
	Concurrency    int
	Timeout        time.Duration // one task's limit; 0: Config.TaskTimeout alone
	HealthInterval time.Duration // between health checks of kinds that have one
	// UnhealthyAfter is how many health checks in a row must fail before
	// a healthy runner's models are withdrawn: one slow answer does not
	// flap the node's capacity. One passing check brings them back.
	UnhealthyAfter int
	Inputs         map[string]string // request field → the server's input name
	Workflow       string            // comfyui: absolute path of the API-format workflow
	OutputNode     string            // comfyui: the node whose output is the clip
	Model          string            // openai-*: the server's model name
	APIKeyEnv      string            // openai-*: environment variable holding a bearer token
	Voices         []wire.Voice      // openai-speech: voices offered
	// HealthURL is what an http runner's health check GETs, wanting 2xx
	// or 3xx; "" GETs URL, where any answer below 500 is healthy (see
	// httpHealth).
	HealthURL string
	// Where is "FILE:LINE" of its entry, or "--runner" for a flag.
	Where string
}

// runnerKinds says what each kind may hold: the fields allowed besides
// name, kind, models, gpu_memory_gb, concurrency, timeout and
// health_interval, and the stages it can serve.
var runnerKinds = map[string]struct {
	fields []string
	stages []string
	models bool // renders catalog models
}{
	RunnerCog:          {fields: []string{"url", "inputs"}, stages: []string{StageAvatar}, models: true},
	RunnerComfyUI:      {fields: []string{"url", "workflow", "output_node"}, stages: []string{StageAvatar}, models: true},
	RunnerOpenAIChat:   {fields: []string{"url", "model", "api_key_env"}, stages: []string{StagePlan}},
	RunnerOpenAISpeech: {fields: []string{"url", "model", "api_key_env", "voices"}, stages: []string{StageTTS}},
	RunnerCommand:      {fields: []string{"command"}, models: true},
	RunnerHTTP:         {fields: []string{"url", "health_url"}, models: true},
}

// commonFields are allowed in every runner.
var commonFields = []string{"name", "kind", "models", "stages", "gpu_memory_gb", "concurrency", "timeout", "health_interval", "unhealthy_after"}

// InputFields are the request fields a runner's inputs may map.
func InputFields() []string {
	return append(append([]string(nil), pipeline.CogFields...), FieldAudio, FieldPortrait)
}

// RunnersFileError lists every mistake of a runners file, one per line as
// "FILE:LINE: PATH: what is wrong". It wraps ErrConfig.
type RunnersFileError struct {
	File     string
	Problems []string
}

func (e *RunnersFileError) Error() string {
	return fmt.Sprintf("runners file %s has %d mistake(s):\n  %s", e.File, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// Unwrap makes errors.Is(err, ErrConfig) true.
func (e *RunnersFileError) Unwrap() error { return ErrConfig }

// fileProblems collects the mistakes of one file.
type fileProblems struct {
	file  string // base name, for messages
	list  []string
	lines []int // of list's entries
}

// sorted is the problems in the order of their lines (stable: those of
// one line keep the order they were found in).
func (p *fileProblems) sorted() []string {
	idx := make([]int, len(p.list))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(p.lines[a], p.lines[b]) })
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = p.list[j]
	}
	return out
}

func (p *fileProblems) add(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.list = append(p.list, fmt.Sprintf("%s:%d: %s: %s", p.file, line, path, fmt.Sprintf(format, args...)))
	p.lines = append(p.lines, line)
}

// LoadRunnersFile reads and checks a runners file (YAML; see
// deploy/runners.example.yaml). Every mistake is reported, together, in a
// *RunnersFileError: unknown fields, kinds, models and input fields, a
// stage a kind cannot serve, duplicate names, a model or stage given to two
// runners, bad numbers and durations, a workflow or program that does not
// exist, an API key variable that is not set. Relative paths are resolved
// against the file's directory.
func LoadRunnersFile(path string) ([]RunnerSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: runners file: %w", ErrConfig, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: runners file: %w", ErrConfig, err)
	}
	return ParseRunnersFile(filepath.Base(path), filepath.Dir(abs), data)
}

// ParseRunnersFile checks a runners file's contents; name is used in
// messages and dir resolves relative paths. See LoadRunnersFile.
func ParseRunnersFile(name, dir string, data []byte) ([]RunnerSpec, error) {
	p := &fileProblems{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &RunnersFileError{File: name, Problems: []string{fmt.Sprintf("%s: %v", name, err)}}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		p.add(&doc, "(top)", "want a mapping with version: 1 and runners: [...]")
		return nil, &RunnersFileError{File: name, Problems: p.sorted()}
	}
	root := doc.Content[0]
	var version, runners *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "version":
			version = v
		case "runners":
			runners = v
		default:
			p.add(k, k.Value, "unknown field (the file has version and runners)")
		}
	}
	var ver int
	switch {
	case version == nil:
		p.add(root, "version", "missing: write version: 1")
	case version.Decode(&ver) != nil || ver != 1:
		p.add(version, "version", "%q: only version 1 exists", version.Value)
	}
	var specs []RunnerSpec
	switch {
	case runners == nil:
		p.add(root, "runners", "missing: list at least one runner")
	case runners.Kind != yaml.SequenceNode || len(runners.Content) == 0:
		p.add(runners, "runners", "want a list of at least one runner")
	default:
		for i, n := range runners.Content {
			specs = append(specs, p.runner(n, fmt.Sprintf("runners[%d]", i), dir))
		}
		p.across(specs, runners.Content)
	}
	if len(p.list) > 0 {
		return nil, &RunnersFileError{File: name, Problems: p.sorted()}
	}
	return specs, nil
}

// across checks what no runner can check alone: unique names, and each
// model and stage served by one runner.
func (p *fileProblems) across(specs []RunnerSpec, nodes []*yaml.Node) {
	names := map[string]string{}
	models := map[string]string{}
	stages := map[string]string{}
	for i, s := range specs {
		path := fmt.Sprintf("runners[%d]", i)
		if s.Name != "" {
			if first, dup := names[s.Name]; dup {
				p.add(nodes[i], path+".name", "%q is also the name of the runner at %s", s.Name, first)
			} else {
				names[s.Name] = s.Where
			}
		}
		for _, m := range s.Models {
			if first, dup := models[m]; dup {
				p.add(nodes[i], path+".models", "model %q is also given to the runner at %s: one runner per model", m, first)
			} else {
				models[m] = s.Where
			}
		}
		for _, st := range s.Stages {
			if first, dup := stages[st]; dup {
				p.add(nodes[i], path+".stages", "stage %q is also given to the runner at %s: one runner per stage", st, first)
			} else {
				stages[st] = s.Where
			}
		}
	}
}

// checkProgram resolves a command's program: a path relative to dir, or a
// name looked up on PATH when the agent runs it.
func checkProgram(program, dir string) (string, error) {
	if !strings.ContainsRune(program, filepath.Separator) {
		return program, nil
	}
	if !filepath.IsAbs(program) {
		program = filepath.Join(dir, program)
	}
	st, err := os.Stat(program)
	switch {
	case err != nil:
		return program, err
	case st.IsDir() || st.Mode()&0o111 == 0:
		return program, errors.New("not an executable file")
	}
	return program, nil
}
