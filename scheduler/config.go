package scheduler

import (
	"fmt"
	"time"
)

// Defaults used by DefaultConfig.
const (
	// DefaultMaxNodeFailures is how many distinct nodes a task may fail on
	// (an error report or an expired lease) before its video fails.
	DefaultMaxNodeFailures = 3
	// DefaultMaxAttempts caps failures of one task whatever the nodes, so a
	// one-node farm cannot retry a broken task forever.
	DefaultMaxAttempts = 6
	// DefaultWarmWindow is how long a task may be passed over in favour of
	// an equally-deserving task whose model is warm on the asking node.
	DefaultWarmWindow = 30 * time.Second
	// DefaultNodeTimeout is how long a node may stay silent before Expire
	// marks it down (down nodes do not count as able to run anything).
	DefaultNodeTimeout = 90 * time.Second
	// MaxScenes bounds AddScenes.
	MaxScenes = 1000
	// MaxGraphTasks bounds the number of tasks a submitted graph may hold.
	MaxGraphTasks = 64
)

// Config holds the policy knobs of a State. It is part of the snapshot, so
// every replica applies the same policy.
type Config struct {
	// MaxNodeFailures: a task that fails on this many distinct nodes fails
	// its video. Zero means DefaultMaxNodeFailures.
	MaxNodeFailures int `json:"max_node_failures"`
	// MaxAttempts: a task that fails this many times in total (on any
	// nodes) fails its video. Zero means DefaultMaxAttempts.
	MaxAttempts int `json:"max_attempts"`
	// WarmWindow bounds the warm-model preference: a node may pick a task
	// whose model is already warm on it over the task the fair-share order
	// would pick, only when both accounts have the same number of running
	// tasks and the passed-over task has been ready for less than this.
	// Zero disables the preference.
	WarmWindow time.Duration `json:"warm_window"`
	// NodeTimeout: Expire marks a node down when its last heartbeat is this
	// old. Zero disables the check.
	NodeTimeout time.Duration `json:"node_timeout"`
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		MaxNodeFailures: DefaultMaxNodeFailures,
		MaxAttempts:     DefaultMaxAttempts,
		WarmWindow:      DefaultWarmWindow,
		NodeTimeout:     DefaultNodeTimeout,
	}
}

// normalized fills zero fields with defaults and checks the rest.
func (c Config) normalized() (Config, error) {
	if c.MaxNodeFailures == 0 {
		c.MaxNodeFailures = DefaultMaxNodeFailures
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxNodeFailures < 0 || c.MaxAttempts < 0 || c.WarmWindow < 0 || c.NodeTimeout < 0 {
		return c, fmt.Errorf("%w: config fields must not be negative: %+v", ErrInvalid, c)
	}
	return c, nil
}
