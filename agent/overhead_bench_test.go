package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/pipeline"
)

// BenchmarkAgentOverhead measures what the agent adds to a render: each
// iteration renders the same 4 s 720p clip through a Cog container (the
// fake of fakecog_test.go, which answers at once) twice, alternating:
//
//   - direct: pipeline.CogRunner.Render, the runner alone;
//   - agent: a render task through the running agent, from the moment the
//     control plane (fakeCP) queues it to the moment it hears the task
//     complete: the lease, the prediction, the clip's probe
//     (Tools.CheckClip, ffprobe), the upload of the clip, the reports.
//
// It reports both per task, their difference (overhead-ms/task), the part
// of it that grows with the clip measured alone (transfer-ms/task: one PUT
// of the clip's bytes over loopback to a server that discards them) and
// what remains (own-ms/task: leasing, the clip check, reports, the work
// directory).
//
//	go test -run '^$' -bench AgentOverhead -benchtime 20x -count 3 ./agent/
//
// agent/README.md ("Overhead") has the figures.
func BenchmarkAgentOverhead(b *testing.B) {
	cog := newAgentFakeCog(b, "READY")
	close(cog.Gate)
	f := newFakeCP(b)
	f.ended = make(chan string, 1)
	cfg := testConfig(b, f)
	cfg.RunnerSpecs = []RunnerSpec{cogSpec(cog)}
	cfg.HeartbeatInterval = 5 * time.Second // the control plane's default, not the tests' 25 ms
	cfg.Tools = &pipeline.Tools{}
	startAgent(b, cfg)
	waitAdvertised(b, f, 0, cogModel, true)

	direct := &pipeline.CogRunner{URL: cog.URL(), Client: &http.Client{}, Inputs: cogSpec(cog).Inputs}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer sink.Close()
	dir := b.TempDir()
	ctx := context.Background()
	b.Logf("load average before: %s", loadAverage())
	var tDirect, tAgent, tTransfer time.Duration
	b.ResetTimer()
	for i := range b.N {
		a := cogRender(fmt.Sprintf("vid_bench%d", i))
		req := pipeline.RenderRequest{Model: cogModel, Operation: pipeline.TextToVideo, Prompt: a.Video.Prompt, Seed: 1,
			Resolution: a.Video.Resolution, AspectRatio: a.Video.AspectRatio, DurationSeconds: float64(a.Video.DurationSeconds),
			OutputPath: filepath.Join(dir, "clip.mp4")}
		start := time.Now()
		if err := direct.Render(ctx, req, func(int) {}); err != nil {
			b.Fatal(err)
		}
		tDirect += time.Since(start)

		start = time.Now()
		f.enqueue(a)
		select {
		case id := <-f.ended:
			if _, ok := f.complete(id); !ok || id != a.TaskID {
				fr, _ := f.failed(id)
				b.Fatalf("task %s did not complete: %s", id, fr.Reason)
			}
		case <-time.After(time.Minute):
			b.Fatal("the task did not end within a minute")
		}
		tAgent += time.Since(start)

		start = time.Now()
		put(b, sink.URL, cog.Clip)
		tTransfer += time.Since(start)
	}
	b.StopTimer()
	perTask := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(perTask(tDirect), "direct-ms/task")
	b.ReportMetric(perTask(tAgent), "agent-ms/task")
	b.ReportMetric(perTask(tAgent-tDirect), "overhead-ms/task")
	b.ReportMetric(perTask(tTransfer), "transfer-ms/task")
	b.ReportMetric(perTask(tAgent-tDirect-tTransfer), "own-ms/task")
	b.ReportMetric(float64(len(cog.Clip)), "clip-bytes")
	b.ReportMetric(0, "ns/op") // the op is two renders; the metrics above say what each took
	b.Logf("load average after: %s", loadAverage())
}

func put(b *testing.B, url string, body []byte) {
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(string(body)))
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute figures, or why not.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error()
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
