package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// cogHealth is the answer of GET /health-check (docs/http.md).
type cogHealth struct {
	Status string `json:"status"` // STARTING, READY, BUSY, SETUP_FAILED, DEFUNCT, UNHEALTHY
	Setup  struct {
		Status string `json:"status"`
		Logs   string `json:"logs"`
	} `json:"setup"`
	UserHealthcheckError string `json:"user_healthcheck_error"`
}

// Health reports whether the container can take predictions with the
// configured inputs: GET /health-check must say READY or BUSY (BUSY is
// ready, its slots all taken; docs/http.md, "GET /health-check"), and every
// input name of Inputs must be a property of the Input schema in GET
// /openapi.json (Cog drops unknown inputs without a word, so a typo would
// otherwise render with the model's defaults). Errors wrap ErrCogNotReady
// or ErrCogInputs, or say why the container could not be asked.
func (r *CogRunner) Health(ctx context.Context) error {
	if !IsRunnerURL(r.URL) {
		return invalidf("cog runner: %q is not an http(s) URL", r.URL)
	}
	c := cogCall{r: r}
	var h cogHealth
	if err := c.getJSON(ctx, "/health-check", &h); err != nil {
		return err
	}
	switch h.Status {
	case "READY", "BUSY":
	case "SETUP_FAILED":
		return fmt.Errorf("%w: %s: setup failed: %s", ErrCogNotReady, RedactURL(r.URL), tail(h.Setup.Logs, 512))
	case "UNHEALTHY":
		return fmt.Errorf("%w: %s: its healthcheck() says unhealthy: %s", ErrCogNotReady, RedactURL(r.URL), h.UserHealthcheckError)
	default:
		return fmt.Errorf("%w: %s: health-check status %q", ErrCogNotReady, RedactURL(r.URL), h.Status)
	}
	return r.checkInputs(ctx, &c)
}

// checkInputs compares Inputs with the model's OpenAPI Input schema.
func (r *CogRunner) checkInputs(ctx context.Context, c *cogCall) error {
	var doc struct {
		Components struct {
			Schemas struct {
				Input struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"Input"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := c.getJSON(ctx, "/openapi.json", &doc); err != nil {
		return err
	}
	props := doc.Components.Schemas.Input.Properties
	var missing []string
	for _, name := range r.Inputs {
		if _, ok := props[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	have := make([]string, 0, len(props))
	for name := range props {
		have = append(have, name)
	}
	slices.Sort(have)
	return fmt.Errorf("%w: %s has no input %s (its inputs: %s); fix `inputs` of this runner in the runners file",
		ErrCogInputs, RedactURL(r.URL), strings.Join(missing, ", "), strings.Join(have, ", "))
}

// getJSON GETs path of the container and decodes its JSON answer.
func (c *cogCall) getJSON(ctx context.Context, path string, v any) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint(path), nil)
	if err != nil {
		return err
	}
	resp, err := c.client().Do(hreq)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCogNotReady, RedactURL(c.r.URL), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: GET %s answered %s", ErrCogNotReady, RedactURL(c.endpoint(path)), resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v); err != nil {
		return fmt.Errorf("%w: GET %s: not the JSON Cog serves: %v", ErrCogNotReady, RedactURL(c.endpoint(path)), err)
	}
	return nil
}

// tail is the last n bytes of s, trimmed.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
