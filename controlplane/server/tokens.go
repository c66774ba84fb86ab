package server

import (
	"errors"
	"fmt"
	"strings"
)

// ErrWeakToken refuses an admin or agent token that is the example's.
var ErrWeakToken = errors.New("weak token")

// MinTokenLength is the shortest admin or agent token taken without a
// warning: 16 characters of hex are 64 bits, beyond guessing through a
// listener. `openssl rand -hex 32` makes 64.
const MinTokenLength = 16

// checkTokens refuses the placeholders of deploy/server.env.example, copied
// as they are (they would let anyone who read the repository in), and warns
// of a short token: every admin and agent request is checked against it,
// and neither listener slows a client that guesses.
func checkTokens(cfg Config) error {
	for _, t := range []struct{ flag, token string }{{"--admin-token", cfg.AdminToken}, {"--agent-token", cfg.AgentToken}} {
		if t.token == "" {
			continue
		}
		if strings.HasPrefix(t.token, "change-me") {
			return fmt.Errorf("%w: %s is the example's placeholder %q; make one with openssl rand -hex 32", ErrWeakToken, t.flag, t.token)
		}
		if len(t.token) < MinTokenLength {
			cfg.Logger.Warn(fmt.Sprintf("%s is shorter than %d characters: anyone who reaches the listener may guess it; make one with openssl rand -hex 32", t.flag, MinTokenLength),
				"length", len(t.token))
		}
	}
	return nil
}
