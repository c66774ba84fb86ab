package agent

import (
	"context"
	"os"
	"os/signal"
	"sync"
)

// NotifyStop is how a daemon stops on sigs (SIGTERM, os.Interrupt): the
// first ends drain, the context to give Run, so the agent drains; the
// second closes now (Config.StopNow), which ends that drain at once, as
// most daemons treat a second signal: an operator who presses Ctrl-C
// again, or a supervisor that sends SIGTERM twice, does not want to wait
// out --drain-timeout. stop unregisters them (a signal
// after it takes its default action) and ends drain.
func NotifyStop(sigs ...os.Signal) (drain context.Context, now <-chan struct{}, stop func()) {
	// Two slots: signal.Notify does not block, and both signals may come
	// before the watcher reads the first.
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	drain, now, end := stopOnSignals(ch)
	return drain, now, func() {
		signal.Stop(ch)
		end()
	}
}

// stopOnSignals is NotifyStop on the signals ch delivers.
func stopOnSignals(ch <-chan os.Signal) (drain context.Context, now <-chan struct{}, stop func()) {
	drain, endDrain := context.WithCancel(context.Background())
	stopNow := make(chan struct{})
	quit := make(chan struct{})
	go func() {
		for n := range 2 {
			select {
			case <-ch:
			case <-quit:
				return
			}
			if n == 0 {
				endDrain()
			} else {
				close(stopNow)
			}
		}
	}()
	var once sync.Once
	return drain, stopNow, func() {
		once.Do(func() { close(quit) })
		endDrain()
	}
}
