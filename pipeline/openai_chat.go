package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// ErrPlanRejected means a language model's scripts kept breaking the plan
// rules (scene count, durations, narration length, empty fields) after
// every attempt. The message lists what was wrong with the last one.
var ErrPlanRejected = errors.New("pipeline: the language model's script was rejected")

// Defaults of a ChatPlanner.
const (
	DefaultChatTimeout  = 3 * time.Minute // one completion
	DefaultPlanAttempts = 3               // scripts asked for before giving up
)

// maxChatAnswer bounds a chat completion's body.
const maxChatAnswer = 4 << 20

// ChatPlanner writes an auto video's script with a language model served by
// any OpenAI-compatible chat completions endpoint: vLLM, llama.cpp's
// llama-server, Ollama, LocalAI, or OpenAI itself (runner kind
// "openai-chat", stage "plan").
//
// It POSTs /v1/chat/completions
// (https://platform.openai.com/docs/api-reference/chat/create) with a
// system message holding vidfarm's rules, one user message holding the
// customer's prompt as a JSON string (the prompt never reaches the system
// role), and response_format {type: json_schema, json_schema: {name,
// strict: true, schema}} (planSchema). The answer, choices[0].message.content,
// is checked (scriptPlan): scene count, durations that add up to the
// video's (scaled when within 10%), narration that can be spoken in its
// scene, no empty fields. A script that breaks a rule is asked for again,
// with what was wrong, up to Attempts times; then Plan fails with
// ErrPlanRejected.
//
// A server that refuses json_schema (an error answer naming
// response_format or json_schema, as older llama.cpp servers give) is asked
// with {type: json_object} and the schema in the system message instead,
// from then on; the answer is checked the same way.
type ChatPlanner struct {
	URL    string // the server ("http://127.0.0.1:8000") or its API root (".../v1")
	Model  string // the server's model name
	APIKey string // sent as a bearer token when set
	Client *http.Client
	// Timeout bounds one completion (0 = DefaultChatTimeout).
	Timeout time.Duration
	// Attempts is how many scripts to ask for (0 = DefaultPlanAttempts).
	Attempts int
	// WordsPerMinute is the speaking rate narration is sized for
	// (0 = DefaultWordsPerMinute).
	WordsPerMinute int

	jsonObject atomic.Bool // the server refused json_schema
	wait       func(context.Context, time.Duration) error
}

var _ Planner = (*ChatPlanner)(nil)

func (p *ChatPlanner) api() openAIAPI {
	return newOpenAIAPI(p.URL, p.APIKey, p.Client, p.Timeout, DefaultChatTimeout, p.wait)
}

func (p *ChatPlanner) where() string {
	return fmt.Sprintf("openai-chat model %q at %s", p.Model, RedactURL(p.URL))
}

// Health checks that the server answers and serves Model (GET /v1/models).
func (p *ChatPlanner) Health(ctx context.Context) error {
	if err := p.check(); err != nil {
		return err
	}
	if err := p.api().modelsHealth(ctx, p.Model); err != nil {
		return fmt.Errorf("%s: %w", p.where(), err)
	}
	return nil
}

func (p *ChatPlanner) check() error {
	if p.Model == "" {
		return invalidf("openai-chat runner at %s: no model name", RedactURL(p.URL))
	}
	_, err := p.api().endpoint("/chat/completions")
	return err
}

// Plan implements Planner.
func (p *ChatPlanner) Plan(ctx context.Context, prompt string, durationSeconds int) (Plan, error) {
	if err := p.check(); err != nil {
		return Plan{}, err
	}
	d := durationSeconds
	if d < MinAutoSeconds || d > MaxAutoSeconds {
		return Plan{}, invalidf("duration_seconds %d: allowed %d..%d", d, MinAutoSeconds, MaxAutoSeconds)
	}
	wpm := p.WordsPerMinute
	if wpm == 0 {
		wpm = DefaultWordsPerMinute
	}
	if wpm < 60 || wpm > 400 {
		return Plan{}, invalidf("words per minute %d: allowed 60..400", wpm)
	}
	text := normalizeText(prompt)
	if !hasWord(text) {
		return Plan{}, invalidf("prompt has no words to narrate")
	}
	attempts := p.Attempts
	if attempts <= 0 {
		attempts = DefaultPlanAttempts
	}
	var last error
	for range attempts {
		feedback := ""
		if last != nil {
			feedback = last.Error()
		}
		content, problem, err := p.complete(ctx, d, wpm, planUserMessage(text, d, feedback))
		if err != nil {
			return Plan{}, fmt.Errorf("%s: %w", p.where(), err)
		}
		plan, err := answerPlan(content, problem, text, d, wpm)
		if err == nil {
			plan.Writer = "openai-chat " + p.Model
			return plan, nil
		}
		last = err
	}
	return Plan{}, fmt.Errorf("%w: %s wrote no usable script for a %d s video in %d attempts; the last one: %v. "+
		"A larger or instruction-tuned model keeps to the rules more often; without a plan runner vidfarm writes scripts itself",
		ErrPlanRejected, p.where(), d, attempts, last)
}

// answerPlan is the plan of one answer, or what is wrong with it.
func answerPlan(content, problem, prompt string, d, wpm int) (Plan, error) {
	if problem != "" {
		return Plan{}, errors.New(problem)
	}
	sc, err := parseScript(content)
	if err != nil {
		return Plan{}, err
	}
	return scriptPlan(sc, prompt, d, wpm)
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	Model          string         `json:"model"`
	Messages       []chatMessage  `json:"messages"`
	ResponseFormat map[string]any `json:"response_format"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatCompletion is the part of the chat completion object Plan reads.
type chatCompletion struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// complete asks for one script and returns the model's text. A refusal or
// a cut-off answer comes back as a problem instead, to be asked for again
// like any other bad script.
func (p *ChatPlanner) complete(ctx context.Context, d, wpm int, user string) (content, problem string, err error) {
	for {
		fallback := p.jsonObject.Load()
		req := chatRequest{
			Model: p.Model,
			Messages: []chatMessage{
				{Role: "system", Content: planSystemPrompt(d, wpm, fallback)},
				{Role: "user", Content: user},
			},
			ResponseFormat: map[string]any{"type": "json_object"},
		}
		if !fallback {
			req.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{
				"name": "video_script", "strict": true, "schema": planSchema(d),
			}}
		}
		ans, err := p.api().call(ctx, http.MethodPost, "/chat/completions", req, maxChatAnswer)
		var apiErr *APIError
		if !fallback && errors.As(err, &apiErr) && refusesSchema(apiErr) {
			p.jsonObject.Store(true)
			continue
		}
		if err != nil {
			return "", "", err
		}
		var cc chatCompletion
		if err := json.Unmarshal(ans.body, &cc); err != nil || len(cc.Choices) == 0 {
			return "", "", fmt.Errorf("%w: the answer is not a chat completion object with choices", ErrRunnerFailed)
		}
		c := cc.Choices[0]
		switch {
		case c.Message.Refusal != nil && *c.Message.Refusal != "":
			return "", "the model refused: " + oneLine(*c.Message.Refusal), nil
		case c.FinishReason == "length":
			return "", "the answer was cut off at the token limit before the JSON object ended; write shorter visuals and narration", nil
		case c.Message.Content == nil:
			return "", "the answer has no content", nil
		}
		return *c.Message.Content, "", nil
	}
}

// refusesSchema reports whether an error answer is a server saying it does
// not take response_format json_schema: an error whose message or param
// names it. Seen in the wild: llama.cpp forks answering 500 `response_format
// type must be one of "text" or "json_object", but got: json_schema`
// (ik_llama.cpp issue 778) and llama-server answering 400 `Either
// "json_schema" or "grammar" can be specified, but not both` when the chat
// template brings a grammar (ggml-org/llama.cpp issue 11847). Busy answers
// are not refusals.
func refusesSchema(e *APIError) bool {
	if retryable(e) || e.Status < 400 {
		return false
	}
	m := strings.ToLower(e.Message + " " + e.Param)
	return strings.Contains(m, "response_format") || strings.Contains(m, "json_schema")
}
