// Command vidfarm is the one binary of the render farm: the control-plane server,
// the embedded development farm, the admin CLI and the bench tools. It only wires
// flags to the packages that hold the logic.
package main

import (
	"fmt"
	"os"

	"github.com/vidfarm/vidfarm/textguard"
)

const usage = `vidfarm: a self-hostable GPU render farm for AI video generation

usage:
  vidfarm dev      start the embedded single-node farm and print a working API key
  vidfarm server   run a control-plane node
  vidfarm video    create, get, list, cancel, render (a preview) and watch videos through the public API (the Go SDK)
  vidfarm webhook  create, list and delete webhook endpoints, their deliveries; test, retry, rotate the secret, enable
  vidfarm admin    manage accounts, keys, credits, plans, videos, render nodes and the cluster (JSON; node, queue and video inspect print tables without --json)
  vidfarm agent    run a render node: register, lease tasks, render (--print-capacity: what NVML sees)
  vidfarm bench    load tools for capacity planning

Every flag of dev, server, agent and bench, and admin's own flags before its
command, has a VIDFARM_ environment equivalent (--data-dir = VIDFARM_DATA_DIR,
--admin-token = VIDFARM_ADMIN_TOKEN); video and webhook read VIDFARM_URL and
VIDFARM_API_KEY. The flags of a single request (admin's, video's and webhook's
subcommands, such as --idempotency-key) come from the command line only.
Run "vidfarm <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "dev":
		err = runDev(os.Args[2:])
	case "server":
		err = runServer(os.Args[2:])
	case "admin":
		err = runAdmin(os.Args[2:])
	case "video":
		err = runVideo(os.Args[2:])
	case "webhook":
		err = runWebhook(os.Args[2:])
	case "agent":
		err = runAgent(os.Args[2:])
	case "bench":
		err = runBench(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "vidfarm: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		// An error may carry a server's words (an API error's message):
		// printed with what would act on the terminal made visible.
		fmt.Fprintf(os.Stderr, "vidfarm %s: %s\n", os.Args[1], textguard.PrintableLines(err.Error()))
		os.Exit(1)
	}
}
