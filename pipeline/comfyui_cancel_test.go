package pipeline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// Renders that end early or lose their websocket: cancel, websocket
// loss, a prompt deleted elsewhere.

func TestComfyUICancel(t *testing.T) {
	for _, tc := range []struct {
		name           string
		setup          func(f *fakeComfy)
		ready          func(f *fakeComfy) bool
		interrupt, del bool
	}{
		{"running", func(f *fakeComfy) { f.holdAt = "5" }, func(f *fakeComfy) bool { return f.running != nil && f.at == "5" }, true, false},
		{"running on an older server", func(f *fakeComfy) { f.holdAt, f.legacy = "5", true },
			func(f *fakeComfy) bool { return f.running != nil && f.at == "5" }, true, false},
		{"pending", func(f *fakeComfy) { f.paused = true }, func(f *fakeComfy) bool { return len(f.queue) == 1 }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeComfy(t, tc.setup)
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- f.runner(comfyWorkflow(t, comfyT2V(comfyVHS))).Render(ctx, comfyRequest(t), nil) }()
			waitForComfy(t, f, tc.ready)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			id := f.all[0].id
			if got := len(f.interrupts) == 1 && f.interrupts[0] == id; got != tc.interrupt {
				t.Errorf("interrupts %q for prompt %s: want interrupted %v", f.interrupts, id, tc.interrupt)
			}
			if got := len(f.deleted) == 1 && f.deleted[0] == id && len(f.queue) == 0; got != tc.del {
				t.Errorf("deleted %q (queue %d) for prompt %s: want deleted %v", f.deleted, len(f.queue), id, tc.del)
			}
		})
	}
}

// waitForComfy polls cond under the fake's lock until it holds.
func waitForComfy(t *testing.T, f *fakeComfy, cond func(*fakeComfy) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		f.mu.Lock()
		ok := cond(f)
		f.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the fake ComfyUI")
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not a wait for an event
	}
}

func TestComfyUIWebsocketDrop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fakeComfy)
		msg   string // "": success
	}{
		{"render goes on", func(f *fakeComfy) { f.dropWSAt = 2 }, ""},
		{"older server", func(f *fakeComfy) { f.dropWSAt, f.legacy = 2, true }, ""},
		{"fails after the drop", func(f *fakeComfy) { f.dropWSAt, f.errorAt = 1, "6" }, `node "6" (VAEDecode) failed: torch.OutOfMemoryError`},
		{"server restarted", func(f *fakeComfy) { f.dropWSAt, f.forget = 2, true }, "no longer knows the prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeComfy(t, tc.setup)
			req := comfyRequest(t)
			var log progressLog
			err := f.runner(comfyWorkflow(t, comfyT2V(comfyVHS))).Render(testCtx(t), req, log.fn)
			if tc.msg != "" {
				checkComfyFailed(t, err, tc.msg, req.OutputPath)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(req.OutputPath)
			if !bytes.Equal(got, f.clip) {
				t.Fatal("the clip is not the server's")
			}
			checkProgress(t, log.values())
			if logs := f.logs.String(); !strings.Contains(logs, "comfyui websocket lost; following the prompt by polling /history") {
				t.Errorf("the websocket loss was not logged: %s", logs)
			}
		})
	}
}

// A prompt deleted from the queue by someone else sends no message; the
// runner notices on its periodic look at the history and the queue.
func TestComfyUIPromptDeletedElsewhere(t *testing.T) {
	f := newFakeComfy(t, func(f *fakeComfy) { f.paused = true })
	done := make(chan error, 1)
	req := comfyRequest(t)
	go func() { done <- f.runner(comfyWorkflow(t, comfyT2V(comfyVHS))).Render(testCtx(t), req, nil) }()
	waitForComfy(t, f, func(f *fakeComfy) bool {
		if len(f.queue) != 1 {
			return false
		}
		f.queue = nil // as POST /queue {"clear": true} from the ComfyUI page
		return true
	})
	checkComfyFailed(t, <-done, "the server no longer knows the prompt", req.OutputPath)
}
