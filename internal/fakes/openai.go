package fakes

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fake OpenAI-compatible servers that follow the API reference
// (https://platform.openai.com/docs/api-reference): bearer keys, strict
// request bodies (unknown fields are refused, as OpenAI does), the chat
// completion object, audio bodies, and errors as {"error": {"message",
// "type", "param", "code"}}.

// OpenAIReply is one scripted answer. A zero status means 200; for chat, a
// 200 carries content as choices[0].message.content.
type OpenAIReply struct {
	Status  int
	Header  map[string]string
	Content string
	Finish  string // finish_reason ("" = "stop")
	ErrMsg  string // for error statuses
	ErrCode string
}

// OpenAI serves /v1/chat/completions, /v1/audio/speech and /v1/models.
type OpenAI struct {
	Model  string
	APIKey string
	Voices []string
	// NoSchema makes the server refuse response_format json_schema, as
	// llama.cpp's server did before it took it.
	NoSchema bool
	Chat     func(n int, req ChatRequest) OpenAIReply // n counts chat requests from 0
	Speech   func(n int, req SpeechRequest) (OpenAIReply, []byte)

	// down makes GET /v1/models answer 503, as a server still loading or
	// gone bad does (SetDown).
	down atomic.Bool

	Mu      sync.Mutex
	Refused int // json_schema requests refused (noSchema)
	chats   []ChatRequest
	speaks  []SpeechRequest
	Server  *httptest.Server
}

// ChatMessage is one message of a chat request.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// SpeechRequest is the body of POST /v1/audio/speech.
type SpeechRequest struct {
	Model          string `json:"model"`
	Input          string `json:"input"`
	Voice          string `json:"voice"`
	ResponseFormat string `json:"response_format"`
}

// ChatRequest is what the fake decodes from a chat request.
type ChatRequest struct {
	Model          string        `json:"model"`
	Messages       []ChatMessage `json:"messages"`
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

// NewOpenAI starts f on loopback; it stops with the test.
func NewOpenAI(t testing.TB, f *OpenAI) *OpenAI {
	if f.Model == "" {
		f.Model = "test-model"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.serveChat)
	mux.HandleFunc("POST /v1/audio/speech", f.serveSpeech)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if !f.authorized(w, r) {
			return
		}
		if f.down.Load() {
			writeAPIError(w, 503, "the server is not ready", "server_error", "", "")
			return
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{
			{"id": f.Model, "object": "model", "created": 1700000000, "owned_by": "fake"},
			{"id": "other-model", "object": "model", "created": 1700000000, "owned_by": "fake"},
		}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAPIError(w, 404, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "", "")
	})
	f.Server = httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(f.Server.Close)
	return f
}

// SetDown makes the server's health route (GET /v1/models) fail, or
// answer again.
func (f *OpenAI) SetDown(down bool) { f.down.Store(down) }

// URL is the server's base URL (the API is under /v1).
func (f *OpenAI) URL() string { return f.Server.URL }

func writeAPIError(w http.ResponseWriter, status int, msg, typ, param, code string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		e["param"] = param
	}
	if code != "" {
		e["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func (f *OpenAI) authorized(w http.ResponseWriter, r *http.Request) bool {
	if f.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+f.APIKey {
		writeAPIError(w, 401, "Incorrect API key provided.", "invalid_request_error", "", "invalid_api_key")
		return false
	}
	return true
}

// accept checks the key and reads a JSON body into v, refusing unknown
// fields; it answers the error itself.
func (f *OpenAI) accept(w http.ResponseWriter, r *http.Request, v any) bool {
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

func (f *OpenAI) serveChat(w http.ResponseWriter, r *http.Request) {
	var req ChatRequest
	if !f.accept(w, r, &req) {
		return
	}
	if req.Model != f.Model {
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
	case rf.Type == "json_schema" && f.NoSchema:
		f.Mu.Lock()
		f.Refused++
		f.Mu.Unlock()
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
	f.Mu.Lock()
	n := len(f.chats)
	f.chats = append(f.chats, req)
	f.Mu.Unlock()
	rep := f.Chat(n, req)
	if rep.writeError(w) {
		return
	}
	finish := rep.Finish
	if finish == "" {
		finish = "stop"
	}
	writeJSON(w, 200, map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": f.Model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": rep.Content, "refusal": nil},
			"finish_reason": finish,
		}},
		"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
	})
}

func (f *OpenAI) serveSpeech(w http.ResponseWriter, r *http.Request) {
	var req SpeechRequest
	if !f.accept(w, r, &req) {
		return
	}
	switch {
	case req.Model != f.Model:
		writeAPIError(w, 404, "Unsupported model: "+req.Model, "invalid_request_error", "model", "model_not_found")
		return
	case req.Input == "" || len([]rune(req.Input)) > 4096:
		writeAPIError(w, 400, "input must be 1 to 4096 characters", "invalid_request_error", "input", "")
		return
	case !slices.Contains(f.Voices, req.Voice):
		writeAPIError(w, 400, "Voice '"+req.Voice+"' not found", "invalid_request_error", "voice", "")
		return
	case !slices.Contains([]string{"mp3", "opus", "aac", "flac", "wav", "pcm"}, req.ResponseFormat):
		writeAPIError(w, 400, "Invalid response_format", "invalid_request_error", "response_format", "")
		return
	}
	f.Mu.Lock()
	n := len(f.speaks)
	f.speaks = append(f.speaks, req)
	f.Mu.Unlock()
	rep, body := f.Speech(n, req)
	if rep.writeError(w) {
		return
	}
	w.WriteHeader(200)
	_, _ = w.Write(body)
}

// writeError sets the reply's headers and, for an error status, answers
// the error object and reports true.
func (rep OpenAIReply) writeError(w http.ResponseWriter) bool {
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status == 0 || rep.Status == 200 {
		return false
	}
	writeAPIError(w, rep.Status, rep.ErrMsg, "invalid_request_error", "", rep.ErrCode)
	return true
}

// ChatRequests are the chat requests received, in order.
func (f *OpenAI) ChatRequests() []ChatRequest {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.chats)
}

// SpeechRequests are the speech requests received, in order.
func (f *OpenAI) SpeechRequests() []SpeechRequest {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return slices.Clone(f.speaks)
}

// WAV is a 24 kHz 16-bit mono PCM WAV of d; stream leaves the sizes
// as a streaming writer does (0xFFFFFFFF).
func WAV(d time.Duration, stream bool) []byte {
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
