package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// ErrInvalidWorkflow means a ComfyUI workflow file cannot be used: it is
// not JSON in ComfyUI's API format, or one of its placeholders is not a
// field vidfarm fills. The wrapped message names the node and the input.
var ErrInvalidWorkflow = errors.New("pipeline: invalid ComfyUI workflow")

// ComfyWorkflow is a ComfyUI workflow in its API format ("Save (API
// Format)" in ComfyUI: an object of node id → {"class_type", "inputs"}; see
// ComfyUI's execution.py validate_prompt) whose inputs may hold
// placeholders: a string value that is exactly "{{field}}" is replaced by
// the field's value in its JSON type when a render is queued.
//
// Fields: prompt, negative_prompt (strings), seed, width, height,
// num_frames, fps (integers), duration_seconds (a number), and the files,
// which are uploaded first and become the name ComfyUI gave them: image
// (the first input image), last_image (the last input image, of two or
// more), images (all input images, as an array of names), audio and
// portrait (an avatar's narration and picture, for the avatar stage).
type ComfyWorkflow struct {
	// Source names the workflow in messages (its path).
	Source string

	raw          []byte
	classes      map[string]string // node id → class_type
	placeholders []ComfyPlaceholder
	weights      map[string]float64 // node id → share of the work (see comfyProgress)
}

// ComfyPlaceholder is one placeholder of a workflow.
type ComfyPlaceholder struct {
	Node  string // node id, e.g. "6"
	Class string // the node's class_type, e.g. "CLIPTextEncode"
	Input string // input name, e.g. "text"
	Field string // vidfarm field, e.g. "prompt"
}

// ComfyInputs are the values of a render's fields by field name: JSON
// values for the scalar fields, local file paths for the file fields (a
// string, or a []string for images).
type ComfyInputs map[string]any

// comfyFileFields are the fields whose values are files to upload.
var comfyFileFields = []string{"image", "last_image", "images", "audio", "portrait"}

// comfyScalarFields are the fields whose values go into the workflow as
// they are.
var comfyScalarFields = []string{"prompt", "negative_prompt", "seed", "width", "height", "num_frames", "fps", "duration_seconds"}

var (
	comfyPlaceholderRE = regexp.MustCompile(`^\{\{([A-Za-z0-9_.-]*)\}\}$`)
	comfyEmbeddedRE    = regexp.MustCompile(`\{\{[A-Za-z0-9_.-]*\}\}`)
)

// LoadComfyWorkflow reads and checks a workflow file (see ComfyWorkflow).
func LoadComfyWorkflow(path string) (*ComfyWorkflow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidWorkflow, err)
	}
	return ParseComfyWorkflow(path, data)
}

// ParseComfyWorkflow checks a workflow in ComfyUI's API format; source
// names it in messages.
func ParseComfyWorkflow(source string, data []byte) (*ComfyWorkflow, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidWorkflow, source, fmt.Sprintf(format, args...))
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, bad("not a JSON object: %v", err)
	}
	if _, ok := probe["nodes"]; ok {
		if _, ok := probe["links"]; ok {
			return nil, bad(`this is ComfyUI's UI format (it has "nodes" and "links"); export the workflow with "Save (API Format)"`)
		}
	}
	if len(probe) == 0 {
		return nil, bad("the workflow has no nodes")
	}
	w := &ComfyWorkflow{Source: source, raw: data, classes: map[string]string{}, weights: map[string]float64{}}
	for _, id := range sortedKeys(probe) {
		var node struct {
			ClassType string                     `json:"class_type"`
			Inputs    map[string]json.RawMessage `json:"inputs"`
		}
		if err := json.Unmarshal(probe[id], &node); err != nil {
			return nil, bad("node %q is not an object with class_type and inputs: %v", id, err)
		}
		if node.ClassType == "" {
			return nil, bad("node %q has no class_type", id)
		}
		w.classes[id] = node.ClassType
		w.weights[id] = comfyNodeWeight(node.Inputs)
		for _, input := range sortedKeys(node.Inputs) {
			var s string
			if json.Unmarshal(node.Inputs[input], &s) != nil {
				continue // a number, a link [node, slot] or a list: nothing to fill
			}
			where := fmt.Sprintf("node %q (%s) input %q", id, node.ClassType, input)
			m := comfyPlaceholderRE.FindStringSubmatch(s)
			if m == nil {
				if comfyEmbeddedRE.MatchString(s) {
					return nil, bad(`%s: %q: a placeholder must be the whole value, e.g. "{{prompt}}"`, where, s)
				}
				continue
			}
			if !slices.Contains(comfyScalarFields, m[1]) && !slices.Contains(comfyFileFields, m[1]) {
				return nil, bad("%s: unknown placeholder %s; known: %s, %s", where, s,
					strings.Join(comfyScalarFields, ", "), strings.Join(comfyFileFields, ", "))
			}
			w.placeholders = append(w.placeholders, ComfyPlaceholder{Node: id, Class: node.ClassType, Input: input, Field: m[1]})
		}
	}
	return w, nil
}

// comfyNodeWeight is a node's share of the work: its step count for a
// sampler (a node with a numeric "steps" input), else 1. Samplers are
// where a video model spends its time.
func comfyNodeWeight(inputs map[string]json.RawMessage) float64 {
	var steps float64
	if err := json.Unmarshal(inputs["steps"], &steps); err == nil && steps >= 1 && !math.IsInf(steps, 0) {
		return steps
	}
	return 1
}

// Placeholders lists the workflow's placeholders, by node id then input.
func (w *ComfyWorkflow) Placeholders() []ComfyPlaceholder {
	return slices.Clone(w.placeholders)
}

// HasNode reports whether the workflow has a node with this id.
func (w *ComfyWorkflow) HasNode(id string) bool {
	_, ok := w.classes[id]
	return ok
}

// Fields lists the fields the workflow's placeholders use, sorted.
func (w *ComfyWorkflow) Fields() []string {
	var out []string
	for _, p := range w.placeholders {
		if !slices.Contains(out, p.Field) {
			out = append(out, p.Field)
		}
	}
	sort.Strings(out)
	return out
}

// check reports the first placeholder whose field in does not have.
func (w *ComfyWorkflow) check(in ComfyInputs) error {
	for _, p := range w.placeholders {
		if _, ok := in[p.Field]; !ok {
			return invalidf("workflow %s needs %s (node %q (%s) input %q), which this request does not have",
				w.Source, p.Field, p.Node, p.Class, p.Input)
		}
	}
	return nil
}

// fill returns the workflow with every placeholder replaced by its
// field's value in values (files already uploaded: their names).
func (w *ComfyWorkflow) fill(values map[string]any) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(w.raw))
	dec.UseNumber() // seeds are 64-bit: keep every number as it was written
	var prompt map[string]any
	if err := dec.Decode(&prompt); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidWorkflow, w.Source, err)
	}
	if err := w.check(values); err != nil {
		return nil, err
	}
	for _, p := range w.placeholders {
		prompt[p.Node].(map[string]any)["inputs"].(map[string]any)[p.Input] = values[p.Field]
	}
	return prompt, nil
}

// comfyRequestInputs are a render request's field values (the request is
// normalized; w×h its frame size). num_frames is duration × fps rounded,
// at least 1.
func comfyRequestInputs(req RenderRequest, w, h int) ComfyInputs {
	in := ComfyInputs{
		"prompt":           req.Prompt,
		"negative_prompt":  req.NegativePrompt,
		"seed":             req.Seed,
		"width":            w,
		"height":           h,
		"fps":              req.FPS,
		"duration_seconds": req.DurationSeconds,
		"num_frames":       max(1, int(math.Round(req.DurationSeconds*float64(req.FPS)))),
	}
	if n := len(req.InputImages); n > 0 {
		in["image"] = req.InputImages[0]
		in["images"] = slices.Clone(req.InputImages)
		if n > 1 {
			in["last_image"] = req.InputImages[n-1]
		}
	}
	return in
}

// sortedKeys returns m's keys in order, so that messages and uploads are
// the same from run to run.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
