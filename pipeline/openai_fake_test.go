package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fake OpenAI-compatible servers that follow the API reference
// (https://platform.openai.com/docs/api-reference): bearer keys, strict
// request bodies (unknown fields are refused, as OpenAI does), the chat
// completion object, audio bodies, and errors as {"error": {"message",
// "type", "param", "code"}}.

// fakeReply is one scripted answer. A zero status means 200; for chat, a
// 200 carries content as choices[0].message.content.
type fakeReply struct {
	status  int
	header  map[string]string
	content string
	finish  string // finish_reason ("" = "stop")
	errMsg  string // for error statuses
	errCode string
}

// fakeOpenAI serves /v1/chat/completions, /v1/audio/speech and /v1/models.
type fakeOpenAI struct {
	t      *testing.T
	model  string
	apiKey string
	voices []string
	// noSchema makes the server refuse response_format json_schema, as
	// llama.cpp's server did before it took it.
	noSchema bool
	chat     func(n int, req fakeChatRequest) fakeReply // n counts chat requests from 0
	speech   func(n int, req speechRequest) (fakeReply, []byte)

	mu      sync.Mutex
	refused int // json_schema requests refused (noSchema)
	chats   []fakeChatRequest
	speaks  []speechRequest
	srv     *httptest.Server
}

// fakeChatRequest is what the fake decodes from a chat request.
type fakeChatRequest struct {
	Model          string        `json:"model"`
	Messages       []chatMessage `json:"messages"`
	ResponseFormat struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string         `json:"name"`
			Strict bool           `json:"strict"`
			Schema map[string]any `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func newFakeOpenAI(t *testing.T, f *fakeOpenAI) *fakeOpenAI {
	f.t = t
	if f.model == "" {
		f.model = "test-model"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.serveChat)
	mux.HandleFunc("POST /v1/audio/speech", f.serveSpeech)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if !f.authorized(w, r) {
			return
		}
		writeJSONAnswer(w, 200, map[string]any{"object": "list", "data": []map[string]any{
			{"id": f.model, "object": "model", "created": 1700000000, "owned_by": "fake"},
			{"id": "other-model", "object": "model", "created": 1700000000, "owned_by": "fake"},
		}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, 404, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "", "")
	})
	f.srv = httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeOpenAI) url() string { return f.srv.URL }

func writeJSONAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeAPIError(w http.ResponseWriter, status int, msg, typ, param, code string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	writeJSONAnswer(w, status, map[string]any{"error": e})
}

func (f *fakeOpenAI) authorized(w http.ResponseWriter, r *http.Request) bool {
	if f.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+f.apiKey {
		writeAPIError(w, 401, "Incorrect API key provided.", "invalid_request_error", "", "invalid_api_key")
		return false
	}
	return true
}

// accept checks the key and reads a JSON body into v, refusing unknown
// fields; it answers the error itself.
func (f *fakeOpenAI) accept(w http.ResponseWriter, r *http.Request, v any) bool {
	if !f.authorized(w, r) {
		return false
	}
	if r.Header.Get("Content-Type") != "application/json" {
		writeAPIError(w, 400, "Content-Type must be application/json", "invalid_request_error", "", "")
		return false
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeAPIError(w, 400, "Unrecognized request argument or bad JSON: "+err.Error(), "invalid_request_error", "", "")
		return false
	}
	return true
}

func (f *fakeOpenAI) serveChat(w http.ResponseWriter, r *http.Request) {
	var req fakeChatRequest
	if !f.accept(w, r, &req) {
		return
	}
	if req.Model != f.model {
		writeAPIError(w, 404, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error", "", "model_not_found")
		return
	}
	mentionsJSON := false
	for i, m := range req.Messages {
		if !slices.Contains([]string{"system", "developer", "user", "assistant"}, m.Role) || m.Content == "" {
			writeAPIError(w, 400, fmt.Sprintf("Invalid value for 'messages[%d]'", i), "invalid_request_error", fmt.Sprintf("messages[%d]", i), "")
			return
		}
		mentionsJSON = mentionsJSON || strings.Contains(strings.ToLower(m.Content), "json")
	}
	switch rf := req.ResponseFormat; {
	case len(req.Messages) == 0:
		writeAPIError(w, 400, "'messages' must not be empty", "invalid_request_error", "messages", "")
		return
	case rf.Type == "json_schema" && f.noSchema:
		f.mu.Lock()
		f.refused++
		f.mu.Unlock()
		writeAPIError(w, 400, `response_format type must be one of "text" or "json_object", but got: json_schema`, "invalid_request_error", "response_format", "")
		return
	case rf.Type == "json_schema" && (rf.JSONSchema == nil || !schemaName.MatchString(rf.JSONSchema.Name) || rf.JSONSchema.Schema["type"] != "object"):
		writeAPIError(w, 400, "Invalid schema for response_format", "invalid_request_error", "response_format", "")
		return
	case rf.Type == "json_object" && !mentionsJSON:
		writeAPIError(w, 400, "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.", "invalid_request_error", "messages", "")
		return
	case rf.Type != "json_schema" && rf.Type != "json_object" && rf.Type != "text":
		writeAPIError(w, 400, "Invalid value for 'response_format.type'", "invalid_request_error", "response_format.type", "")
		return
	}
	f.mu.Lock()
	n := len(f.chats)
	f.chats = append(f.chats, req)
	f.mu.Unlock()
	rep := f.chat(n, req)
	if rep.writeError(w) {
		return
	}
	finish := rep.finish
	if finish == "" {
		finish = "stop"
	}
	writeJSONAnswer(w, 200, map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": f.model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": rep.content, "refusal": nil},
			"finish_reason": finish,
		}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
	})
}

func (f *fakeOpenAI) serveSpeech(w http.ResponseWriter, r *http.Request) {
	var req speechRequest
	if !f.accept(w, r, &req) {
		return
	}
	switch {
	case req.Model != f.model:
		writeAPIError(w, 404, "Unsupported model: "+req.Model, "invalid_request_error", "model", "model_not_found")
		return
	case req.Input == "" || len([]rune(req.Input)) > 4096:
		writeAPIError(w, 400, "input must be 1 to 4096 characters", "invalid_request_error", "input", "")
		return
	case !slices.Contains(f.voices, req.Voice):
		writeAPIError(w, 400, "Voice '"+req.Voice+"' not found", "invalid_request_error", "voice", "")
		return
	case !slices.Contains([]string{"mp3", "opus", "aac", "flac", "wav", "pcm"}, req.ResponseFormat):
		writeAPIError(w, 400, "Invalid response_format", "invalid_request_error", "response_format", "")
		return
	}
	f.mu.Lock()
	n := len(f.speaks)
	f.speaks = append(f.speaks, req)
	f.mu.Unlock()
	rep, body := f.speech(n, req)
	if rep.writeError(w) {
		return
	}
	w.WriteHeader(200)
	_, _ = w.Write(body)
}

// writeError sets the reply's headers and, for an error status, answers
// the error object and reports true.
func (rep fakeReply) writeError(w http.ResponseWriter) bool {
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	if rep.status == 0 || rep.status == 200 {
		return false
	}
	writeAPIError(w, rep.status, rep.errMsg, "invalid_request_error", "", rep.errCode)
	return true
}

func (f *fakeOpenAI) chatRequests() []fakeChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.chats)
}

func (f *fakeOpenAI) speechRequests() []speechRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.speaks)
}

// testWAV is a 24 kHz 16-bit mono PCM WAV of d; stream leaves the sizes
// as a streaming writer does (0xFFFFFFFF).
func testWAV(d time.Duration, stream bool) []byte {
	const rate = 24000
	data := make([]byte, int(d.Seconds()*rate)*2)
	var b bytes.Buffer
	riff, dsize := uint32(36+len(data)), uint32(len(data))
	if stream {
		riff, dsize = 0xFFFFFFFF, 0xFFFFFFFF
	}
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, riff)
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(rate * 2), uint16(2), uint16(16)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, dsize)
	b.Write(data)
	return b.Bytes()
}

// recordWaits replaces the waits between attempts: it records them and
// returns at once.
type recordWaits struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recordWaits) wait(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, d)
	return nil
}

func (r *recordWaits) got() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waits)
}
