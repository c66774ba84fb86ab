package pipeline

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// errStreamCut means a prediction's event stream ended before its
// "completed" event: the connection dropped, so the runner joins the
// prediction again with the same id.
var errStreamCut = errors.New("the event stream ended before the prediction completed")

// sseEvent is one server-sent event (WHATWG HTML, "Server-sent events",
// event stream interpretation): its name and its data lines joined by "\n".
type sseEvent struct {
	name string
	data string
}

// sseReader reads the events of a text/event-stream body.
type sseReader struct {
	br      *bufio.Reader
	maxLine int64
}

// next returns the next event; io.EOF at the end of the stream.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data []string
	for {
		line, err := s.line()
		if err != nil {
			return ev, err
		}
		if line == "" {
			if data == nil && ev.name == "" {
				continue
			}
			ev.data = strings.Join(data, "\n")
			if ev.name == "" {
				ev.name = "message"
			}
			return ev, nil
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "": // a comment, such as a keep-alive
		case "event":
			ev.name = value
		case "data":
			data = append(data, value)
		}
	}
}

// line reads one line without its ending ("\n", "\r\n"), at most maxLine
// bytes: a data URI output arrives as one line.
func (s *sseReader) line() (string, error) {
	var b []byte
	for {
		chunk, err := s.br.ReadSlice('\n')
		b = append(b, chunk...)
		if int64(len(b)) > s.maxLine {
			return "", fmt.Errorf("%w: a line of the event stream is over %d bytes", ErrRunnerFailed, s.maxLine)
		}
		switch {
		case err == nil:
			return strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(b) > 0:
			return string(b), nil
		default:
			return "", err
		}
	}
}

// readStream follows a prediction's event stream to its "completed" event
// and returns the final prediction object (docs/http.md, "Streaming
// predictions with server-sent events"). Log events move the progress.
func (c *cogCall) readStream(resp *http.Response) (cogPrediction, error) {
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return cogPrediction{}, fmt.Errorf("%w: asked for text/event-stream, got %q", ErrRunnerFailed, ct)
	}
	// The completed event carries a data URI output: base64 is 4/3 of the clip.
	sr := &sseReader{br: bufio.NewReaderSize(resp.Body, 64<<10), maxLine: c.maxBytes()*4/3 + 64<<10}
	for {
		ev, err := sr.next()
		if err != nil {
			if errors.Is(err, ErrRunnerFailed) {
				return cogPrediction{}, err
			}
			return cogPrediction{}, fmt.Errorf("%w: %v", errStreamCut, err)
		}
		switch ev.name {
		case "log":
			var l struct {
				Data string `json:"data"`
			}
			if json.Unmarshal([]byte(ev.data), &l) == nil {
				c.logProgress(l.Data)
			}
		case "completed":
			var p cogPrediction
			if err := json.Unmarshal([]byte(ev.data), &p); err != nil {
				return p, fmt.Errorf("%w: the completed event is not a prediction object: %v", ErrRunnerFailed, err)
			}
			return p, nil
		case "error":
			return cogPrediction{}, fmt.Errorf("%w: the event stream reported an error: %s", ErrRunnerFailed, ev.data)
		}
	}
}

// logProgress reports the last progress figure in a chunk of the model's
// logs, capped at 99 until the clip is saved.
func (c *cogCall) logProgress(logs string) {
	if p, ok := LogProgress(logs); ok {
		c.rep.report(min(p, 99))
	}
}

var (
	percentRE  = regexp.MustCompile(`(\d{1,3}(?:\.\d+)?)\s?%`)
	fractionRE = regexp.MustCompile(`\b(\d+)\s?/\s?(\d+)\b`)
)

// LogProgress finds the progress in a chunk of a model's log: the last
// line (tqdm rewrites its line with "\r") holding "NN%" or "N/M", as tqdm
// ("45%|████▌     | 45/100 [00:10<00:12]") and most progress printers
// write it. ok is false when no line holds one.
func LogProgress(logs string) (percent int, ok bool) {
	lines := strings.FieldsFunc(logs, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := len(lines) - 1; i >= 0; i-- {
		if m := percentRE.FindAllStringSubmatch(lines[i], -1); m != nil {
			f, err := strconv.ParseFloat(m[len(m)-1][1], 64)
			if err == nil && f <= 100 {
				return int(f), true
			}
		}
		if m := fractionRE.FindAllStringSubmatch(lines[i], -1); m != nil {
			n, err1 := strconv.Atoi(m[len(m)-1][1])
			d, err2 := strconv.Atoi(m[len(m)-1][2])
			if err1 == nil && err2 == nil && d > 0 && n <= d {
				return n * 100 / d, true
			}
		}
	}
	return 0, false
}
