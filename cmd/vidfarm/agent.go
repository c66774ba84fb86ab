package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/vidfarm/vidfarm/agent"
)

func runAgent(args []string) error {
	fs := flag.NewFlagSet("agent", flag.ExitOnError)
	printCapacity := fs.Bool("print-capacity", false, "print the GPUs (NVML), CPU, memory and tools of this node and exit")
	asJSON := fs.Bool("json", false, "with --print-capacity: print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if !*printCapacity {
		return errors.New("this build's agent can only --print-capacity; pulling render work from the control plane is not wired yet")
	}
	c, err := agent.DiscoverSystem()
	if perr := agent.PrintCapacity(os.Stdout, c, *asJSON); perr != nil {
		return perr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vidfarm agent: some GPU details could not be read: %v\n", err)
	}
	return nil
}
