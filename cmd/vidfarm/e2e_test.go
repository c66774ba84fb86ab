package main

import (
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"
)

// manualBody is a 5 s 480p 16:9 manual request of e2eModel; extra is more
// JSON fields (with a leading comma).
func manualBody(prompt, extra string) string {
	return fmt.Sprintf(`{"mode":"manual","model":%q,"prompt":%q,"resolution":%q,"aspect_ratio":%q,"duration_seconds":5%s}`,
		e2eModel, prompt, e2eResolution, e2eAspect, extra)
}

// manualPrice is what a 5 s e2eModel video at 480p costs: 2 credits a second.
const manualPrice = 2 * 5

// TestE2EEveryOperation renders, through the public API and real processes,
// an auto video and a manual video of each inferred operation, and checks
// the delivered files and the credits.
func TestE2EEveryOperation(t *testing.T) {
	const grant = 500
	f := newE2EFarm(t, grant)
	f.startAgent("agent-1")
	f.startAgent("agent-2")

	type want struct {
		id, op string
		price  int64
	}
	var vids []want
	create := func(body, op string, price int64) {
		t.Helper()
		v := f.createVideo(body)
		if v["status"] != "queued" && v["status"] != "processing" {
			t.Fatalf("new video %v", v)
		}
		if int64(num(v, "credits_charged")) != price {
			t.Fatalf("%s video charged %v, want %d", op, v["credits_charged"], price)
		}
		if op != "auto" && v["operation"] != op {
			t.Fatalf("inferred operation %v, want %s", v["operation"], op)
		}
		vids = append(vids, want{v["id"].(string), op, price})
	}
	create(`{"mode":"auto","prompt":"A short tour of a lighthouse at dawn. Waves roll in.","duration_seconds":5}`, "auto", 3)
	create(manualBody("a red fox running through fresh snow", ""), "text_to_video", manualPrice)
	create(manualBody("the picture comes alive", fmt.Sprintf(`,"image_url":%q`, f.imageURL(0))), "image_to_video", manualPrice)
	create(manualBody("morph from red to green", fmt.Sprintf(`,"first_frame_url":%q,"last_frame_url":%q`, f.imageURL(0), f.imageURL(1))),
		"first_last_frame", manualPrice)
	create(manualBody("a slideshow of colours", fmt.Sprintf(`,"image_urls":[%q,%q,%q]`, f.imageURL(1), f.imageURL(2), f.imageURL(3))),
		"multiple_images", manualPrice)

	var spent int64
	for _, w := range vids {
		spent += w.price
	}
	if got := f.balance(); got != grant-spent {
		t.Fatalf("balance after creating %d videos: %d, want %d", len(vids), got, grant-spent)
	}

	// One deadline for the whole batch: the agents render them side by side.
	deadline := time.Now().Add(100 * time.Second)
	for _, w := range vids {
		v := f.waitStatus(w.id, "completed", time.Until(deadline))
		if v["error"] != nil || int64(num(v, "credits_charged")) != w.price {
			t.Fatalf("%s video completed as %v", w.op, v)
		}
		secs := num(v, "duration_seconds")
		if secs != 5 {
			t.Errorf("%s video: duration_seconds %v, want 5", w.op, secs)
		}
		if w.op != "auto" {
			if v["resolution"] != e2eResolution || v["aspect_ratio"] != e2eAspect {
				t.Errorf("%s video: %v %v", w.op, v["resolution"], v["aspect_ratio"])
			}
			fw, fh := frameSize(t, e2eResolution, e2eAspect)
			if r := float64(fw) / float64(fh); math.Abs(r-16.0/9) > 0.01 {
				t.Fatalf("FrameSize(%s, %s) = %dx%d is not 16:9", e2eResolution, e2eAspect, fw, fh)
			}
			checkMP4(t, f.download(v["video_url"].(string), w.op+".mp4"), secs, fw, fh, false)
			continue
		}
		// auto: narration, captions burned in, a clean copy, SRT and WebVTT.
		fw, fh := frameSize(t, "720p", "16:9")
		for _, k := range []string{"video_url", "video_url_no_captions", "caption_url", "caption_url_srt"} {
			if s, _ := v[k].(string); s == "" {
				t.Fatalf("completed auto video has no %s: %v", k, v)
			}
		}
		info := checkMP4(t, f.download(v["video_url"].(string), "auto.mp4"), secs, fw, fh, true)
		clean := checkMP4(t, f.download(v["video_url_no_captions"].(string), "auto_no_captions.mp4"), secs, fw, fh, true)
		length := min(info.Duration, clean.Duration)
		srt := checkCaptions(t, f.download(v["caption_url_srt"].(string), "auto.srt"), length)
		vtt := checkCaptions(t, f.download(v["caption_url"].(string), "auto.vtt"), length)
		if len(srt.Items) != len(vtt.Items) {
			t.Errorf("SRT has %d cues, WebVTT %d", len(srt.Items), len(vtt.Items))
		}
	}

	// The agents fetched every input image over HTTPS.
	for n := range 4 {
		if f.imageHits(n) == 0 {
			t.Errorf("image %d was never downloaded", n)
		}
	}
	// Charged once, at creation: rendering moved no credits.
	if got := f.balance(); got != grant-spent {
		t.Fatalf("balance after rendering: %d, want %d − %d = %d", got, grant, spent, grant-spent)
	}
}

// TestE2EAgentKilledMidTask: the only agent dies (SIGKILL) while its external
// runner renders; its lease expires, the render is requeued and a second
// agent, started afterwards, finishes the video, charged once.
func TestE2EAgentKilledMidTask(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	g := f.startGatedRender("a lighthouse in a storm", 0)
	a, id, renderTask, done := g.agent, g.id, g.id+"/render", g.done
	if len(findLogs(f.srv, "task leased", "task_id", renderTask, "node_id", a.nodeID)) == 0 {
		t.Fatalf("the render was not leased to agent A (%s)", a.nodeID)
	}

	a.kill()
	b := f.startAgent("agent-b")
	eventually(t, 15*time.Second, "the render's lease on agent A expired and was requeued", func() bool {
		return len(findLogs(f.srv, "lease expired", "task_id", renderTask, "node_id", a.nodeID, "requeued", "true")) > 0
	})
	v := f.waitStatus(id, "completed", 60*time.Second)
	if len(findLogs(f.srv, "task completed", "task_id", renderTask, "node_id", b.nodeID)) != 1 {
		t.Errorf("agent B (%s) did not complete the render exactly once", b.nodeID)
	}
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	checkMP4(t, f.download(v["video_url"].(string), "video.mp4"), num(v, "duration_seconds"), fw, fh, false)
	if exists(done) {
		t.Errorf("agent A's runner finished although its gate never opened")
	}
	if got, charged := f.balance(), int64(num(v, "credits_charged")); charged != manualPrice || got != grant-manualPrice {
		t.Fatalf("charged %d, balance %d; want %d and %d", charged, got, manualPrice, grant-manualPrice)
	}
}

// TestE2EAgentPausedPastLease: agent A is stopped (SIGSTOP) mid-render past
// its lease; agent B takes the render over; A's runner then finishes a clip
// of its own (with a tone) and A is resumed (SIGCONT): the control plane
// refuses A's late reports (stale lease), and the video is B's.
func TestE2EAgentPausedPastLease(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	g := f.startGatedRender("a paper boat on a river", 0)
	a, id, renderTask, gate, done := g.agent, g.id, g.id+"/render", g.gate, g.done

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b := f.startAgent("agent-b")
	eventually(t, 20*time.Second, "agent B leased the render after A's lease expired", func() bool {
		return len(findLogs(f.srv, "lease expired", "task_id", renderTask, "node_id", a.nodeID)) > 0 &&
			len(findLogs(f.srv, "task leased", "task_id", renderTask, "node_id", b.nodeID)) > 0
	})
	// A's runner is in its own process group, so it ran on while A was
	// stopped: let it finish its clip, then wake A up with a result to report.
	touch(t, gate)
	eventually(t, 30*time.Second, "agent A's runner wrote its clip", func() bool { return exists(done) })
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	v := f.waitStatus(id, "completed", 60*time.Second)
	// A learns its lease is stale: from a 409 on its upload or report, or
	// from a heartbeat that names the lease; the control plane refuses it.
	eventually(t, 15*time.Second, "agent A logged that its render lease is stale", func() bool {
		for _, m := range logs(a.proc) {
			if m["task_id"] == renderTask && strings.Contains(fmt.Sprint(m["msg"], m["err"]), "stale") {
				return true
			}
		}
		return false
	})
	refused := 0
	for _, m := range findLogs(f.srv, "agent request", "node_id", a.nodeID, "task_id", renderTask, "status", "409") {
		refused++
		t.Logf("refused A: %v %v", m["method"], m["route"])
	}
	for _, m := range findLogs(f.srv, "heartbeat named stale leases", "node_id", a.nodeID) {
		if strings.Contains(fmt.Sprint(m["stale"]), renderTask) {
			refused++
			t.Logf("refused A: heartbeat named %v stale", m["stale"])
		}
	}
	if refused == 0 {
		t.Errorf("the control plane never told agent A (%s) that its render lease was stale", a.nodeID)
	}
	// A drops the task: it neither reports a failure (the lease is not its
	// to fail) nor counts it as failed.
	for _, m := range logs(a.proc) {
		if m["task_id"] == renderTask && (m["msg"] == "task failed" || strings.Contains(fmt.Sprint(m["msg"]), "fail report")) {
			t.Errorf("agent A treated its stale render as a failure: %v", m)
		}
	}
	if n := len(findLogs(f.srv, "task completed", "task_id", renderTask, "node_id", a.nodeID)); n != 0 {
		t.Errorf("the control plane took agent A's late completion of the render")
	}
	if len(findLogs(f.srv, "task completed", "task_id", renderTask, "node_id", b.nodeID)) != 1 {
		t.Errorf("agent B (%s) did not complete the render exactly once", b.nodeID)
	}
	// The delivered video is B's procedural 854x480 5 s clip, silent, not A's with its tone.
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	if info := checkMP4(t, f.download(v["video_url"].(string), "video.mp4"), 5, fw, fh, false); info.HasAudio {
		t.Error("the delivered video has A's runner's tone: A's late clip was taken")
	}
	if d := num(v, "duration_seconds"); d != 5 {
		t.Errorf("duration_seconds %v, want B's 5", d)
	}
	if got, charged := f.balance(), int64(num(v, "credits_charged")); charged != manualPrice || got != grant-manualPrice {
		t.Fatalf("charged %d, balance %d; want %d and %d", charged, got, manualPrice, grant-manualPrice)
	}
}

// TestE2ERunnerAlwaysFails: the only agent's runner for the model always
// fails; after the retries the video fails with the runner's message and the
// charge is refunded exactly.
func TestE2ERunnerAlwaysFails(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	broken := writeScript(t, f.dir, "broken-runner.sh", `#!/bin/sh
cat >/dev/null
echo "progress 10"
echo "e2e-runner: CUDA error: out of memory (simulated)" >&2
exit 1
`)
	f.startAgent("agent-a", "--runner", e2eModel+"="+broken)

	v := f.createVideo(manualBody("a doomed render", ""))
	id := v["id"].(string)
	if got := f.balance(); got != grant-manualPrice || int64(num(v, "credits_charged")) != manualPrice {
		t.Fatalf("after create: balance %d, charged %v", got, v["credits_charged"])
	}
	v = f.waitStatus(id, "failed", 60*time.Second)
	e, _ := v["error"].(map[string]any)
	if e == nil || e["credits_refunded"] != true {
		t.Fatalf("failed video without a refunded error: %v", v)
	}
	msg, _ := e["message"].(string)
	t.Logf("error.message: %s", msg)
	if !strings.Contains(msg, "CUDA error: out of memory (simulated)") || !strings.Contains(msg, "exited with status 1") {
		t.Errorf("error.message %q does not say how the runner failed", msg)
	}
	if got := f.balance(); got != grant {
		t.Fatalf("balance after the refund: %d, want %d", got, grant)
	}
	if v["video_url"] != nil {
		t.Errorf("a failed video has a video_url: %v", v)
	}
}

// TestE2EOnlyNodePausedPastLease: the farm's only agent is stopped (SIGSTOP)
// past its lease. With no other node, the requeued render goes back to the
// same agent (through a lease poll it sent before it stopped), so once it is
// resumed (SIGCONT) it holds a new lease on a task its old run is still
// working on. The old run must be dropped without taking the new lease down
// with it: the new run is heartbeated past the lease, completes, and the
// video is delivered.
func TestE2EOnlyNodePausedPastLease(t *testing.T) {
	const grant = 100
	f := newE2EFarm(t, grant)
	g := f.startGatedRender("a kite over a beach", 14)
	a, id, renderTask, gate := g.agent, g.id, g.id+"/render", g.gate

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the render's first lease expired and the stopped agent's pending poll got it again", func() bool {
		return len(findLogs(f.srv, "lease expired", "task_id", renderTask, "node_id", a.nodeID)) == 1 &&
			len(findLogs(f.srv, "task leased", "task_id", renderTask, "node_id", a.nodeID, "attempt", "2")) == 1
	})
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	touch(t, gate)

	v := f.waitStatus(id, "completed", 60*time.Second)
	if n := len(findLogs(f.srv, "lease expired", "task_id", renderTask)); n != 1 {
		t.Errorf("the render's lease expired %d times; want once, while the agent was stopped", n)
	}
	if len(findLogs(f.srv, "task completed", "task_id", renderTask, "node_id", a.nodeID)) != 1 {
		t.Errorf("agent A did not complete the render exactly once")
	}
	// The only renderer was A's runner: its clip, with its tone, is the video.
	fw, fh := frameSize(t, e2eResolution, e2eAspect)
	checkMP4(t, f.download(v["video_url"].(string), "video.mp4"), 5, fw, fh, true)
	if got, charged := f.balance(), int64(num(v, "credits_charged")); charged != manualPrice || got != grant-manualPrice {
		t.Fatalf("charged %d, balance %d; want %d and %d", charged, got, manualPrice, grant-manualPrice)
	}
}
