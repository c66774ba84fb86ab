package agentapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vidfarm/vidfarm/controlplane/agentapi"
	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/scheduler"
	"github.com/vidfarm/vidfarm/scheduler/wire"
)

// A node reads a blob only while one of its leases reads it (an input) or
// wrote it: the audit's node credential that read every account's files.
func TestBlobReadsNeedALease(t *testing.T) {
	e := newEnv(t)
	holder := e.register("gpu-a").Credential
	other := e.register("gpu-b").Credential
	e.createVideo()
	render, r := e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	clip := artifactKey(render, "clip.mp4")
	want(t, e.upload(holder, clip, "frames of a fox"), http.StatusCreated, "")
	asset := "assets/ast_secret.png"
	if _, err := e.blobs.Put(context.Background(), asset, strings.NewReader("another account's logo")); err != nil {
		t.Fatal(err)
	}

	refused := func(who, key string) {
		t.Helper()
		for _, method := range []string{"GET", "HEAD"} {
			r := e.call(method, "/agent/v1/blobs/"+key, who, nil)
			if r.status != http.StatusNotFound {
				t.Fatalf("%s %s: got %s, want 404", method, key, r)
			}
			if method == "GET" {
				want(t, r, http.StatusNotFound, apierr.CodeNotFound)
				if !contains(string(r.body), "holds a lease on") {
					t.Fatalf("the refusal does not say why: %s", r.body)
				}
			}
		}
	}
	// The holder reads what its lease uploaded; a node without a lease on
	// the video reads nothing of it, nor another account's asset, and
	// cannot tell a file that exists from one that does not.
	want(t, e.call("GET", "/agent/v1/blobs/"+clip, holder, nil), http.StatusOK, "")
	refused(other, clip)
	refused(other, asset)
	refused(other, "assets/ast_missing.png")
	refused(holder, asset)

	// The next task reads the clip as an input.
	want(t, e.call("POST", taskPath(render.TaskID, "complete"), holder,
		wire.CompleteRequest{Token: render.Token, Artifacts: map[string]string{"clip.mp4": clip}}), http.StatusNoContent, "")
	fin, r := e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	if fin.Name != scheduler.NameFinalize || fin.Inputs["render/clip.mp4"] != clip {
		t.Fatalf("finalize assignment: %+v", fin)
	}
	got := e.call("GET", "/agent/v1/blobs/"+clip, holder, nil)
	want(t, got, http.StatusOK, "")
	if string(got.body) != "frames of a fox" {
		t.Fatalf("input read back as %q", got.body)
	}
	refused(other, clip)

	// Once the lease ends, its holder reads nothing of the video either.
	files := e.completeFinalize(holder, fin, 5)
	refused(holder, clip)
	refused(holder, files[wire.ArtifactVideo])
}

// A node the scheduler marked down reads nothing: its leases are being
// handed to others.
func TestBlobReadsRefusedToADownNode(t *testing.T) {
	e := newEnv(t)
	holder := e.register("gpu-a").Credential
	e.createVideo()
	a, r := e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	clip := artifactKey(a, "clip.mp4")
	want(t, e.upload(holder, clip, "frames"), http.StatusCreated, "")
	want(t, e.call("GET", "/agent/v1/blobs/"+clip, holder, nil), http.StatusOK, "")
	expireAll(t, e)
	want(t, e.call("GET", "/agent/v1/blobs/"+clip, holder, nil), http.StatusConflict, wire.CodeStaleLease)
}

// expireAll applies the leader's lease expiry an hour from now: every lease
// expires and every node is marked down. It pokes the notifier as the
// leader's job does.
func expireAll(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.node.Apply(ctx, &fsm.ExpireLeases{Now: time.Now().Add(time.Hour).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	e.notify.Notify()
}

// One lease stores at most as many files as a completion may list, and at
// most three times the blob limit in bytes; a name stored again counts once.
func TestUploadsPerLeaseAreCapped(t *testing.T) {
	const limit = 1024
	e := newEnv(t, func(c *agentapi.Config) { c.MaxBlobBytes = limit })
	holder := e.register("gpu-a").Credential
	e.createVideo()
	a, r := e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	const maxFiles = 64 // the most artifacts a completion may list
	for i := range maxFiles {
		want(t, e.upload(holder, artifactKey(a, fmt.Sprintf("junk%02d.bin", i)), "x"), http.StatusCreated, "")
	}
	r = e.upload(holder, artifactKey(a, "one-too-many.bin"), "x")
	want(t, r, http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge)
	if details(t, r)["max_files"] != float64(maxFiles) || !contains(string(r.body), "complete the task") {
		t.Fatalf("file cap refusal: %s", r.body)
	}
	if _, err := e.blobs.Stat(context.Background(), artifactKey(a, "one-too-many.bin")); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a refused upload was stored: %v", err)
	}
	want(t, e.upload(holder, artifactKey(a, "junk00.bin"), "again"), http.StatusCreated, "")

	// Bytes: a fresh lease (the first one failed) fills its three blobs'
	// worth, then may only replace.
	want(t, e.call("POST", taskPath(a.TaskID, "fail"), holder, wire.FailRequest{Token: a.Token, Reason: "x"}), http.StatusNoContent, "")
	b, r := e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	full := strings.Repeat("x", limit)
	for _, f := range []string{"a.bin", "b.bin", "c.bin"} {
		want(t, e.upload(holder, artifactKey(b, f), full), http.StatusCreated, "")
	}
	r = e.upload(holder, artifactKey(b, "d.bin"), "x")
	want(t, r, http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge)
	if details(t, r)["max_lease_bytes"] != float64(3*limit) {
		t.Fatalf("byte cap refusal: %s", r.body)
	}
	want(t, e.upload(holder, artifactKey(b, "a.bin"), full[:limit/2]), http.StatusCreated, "")
	want(t, e.upload(holder, artifactKey(b, "d.bin"), full[:limit/2]), http.StatusCreated, "")
	want(t, e.upload(holder, artifactKey(b, "e.bin"), "x"), http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge)
}

// details returns the error envelope's details.
func details(t *testing.T, r resp) map[string]any {
	t.Helper()
	var env struct {
		Error struct {
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return env.Error.Details
}

// What a lease uploaded and its completion did not list is deleted when
// the lease ends, whichever way it ends; what the completion listed stays.
func TestUnlistedUploadsDeletedWhenTheLeaseEnds(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *agentapi.Config) { c.Registerer = reg })
	holder := e.register("gpu-a").Credential
	junk := func(a wire.Assignment) []string {
		t.Helper()
		var keys []string
		for i := range 5 {
			k := artifactKey(a, fmt.Sprintf("junk%d.bin", i))
			want(t, e.upload(holder, k, strings.Repeat("j", 100)), http.StatusCreated, "")
			keys = append(keys, k)
		}
		return keys
	}

	// The audit's case: junk, then a permanent failure.
	e.createVideo()
	a, r := e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	failed := append(junk(a), artifactKey(a, "clip.mp4"))
	want(t, e.upload(holder, artifactKey(a, "clip.mp4"), "frames"), http.StatusCreated, "")
	want(t, e.call("POST", taskPath(a.TaskID, "fail"), holder,
		wire.FailRequest{Token: a.Token, Reason: "bad input", Permanent: true}), http.StatusNoContent, "")
	waitGone(t, e, failed...)

	// A completion keeps what it listed.
	e.createVideo()
	a, r = e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	unlisted := junk(a)
	clip := artifactKey(a, "clip.mp4")
	want(t, e.upload(holder, clip, "frames"), http.StatusCreated, "")
	want(t, e.call("POST", taskPath(a.TaskID, "complete"), holder,
		wire.CompleteRequest{Token: a.Token, Artifacts: map[string]string{"clip.mp4": clip}}), http.StatusNoContent, "")
	waitGone(t, e, unlisted...)
	if _, err := e.blobs.Stat(context.Background(), clip); err != nil {
		t.Fatalf("the listed artifact was deleted: %v", err)
	}

	// An expired lease leaves nothing either; the task is tried again.
	e.createVideo()
	a, r = e.lease(holder, 5)
	want(t, r, http.StatusOK, "")
	expired := junk(a)
	expireAll(t, e)
	waitGone(t, e, expired...)
	if _, err := e.blobs.Stat(context.Background(), clip); err != nil {
		t.Fatalf("another video's artifact was deleted: %v", err)
	}

	// Counted: 6 + 5 + 5 files, 5×100 + 6 + 5×100 + 5×100 bytes, none
	// refused by the store. The count follows each delete, so poll.
	want := map[string]float64{
		"vidfarm_agentapi_unlisted_uploads_deleted_total":        16,
		"vidfarm_agentapi_unlisted_upload_bytes_deleted_total":   1506,
		"vidfarm_agentapi_unlisted_upload_delete_failures_total": 0,
	}
	deadline := time.Now().Add(20 * time.Second)
	for got := counters(t, reg, want); !maps.Equal(got, want); got = counters(t, reg, want) {
		if time.Now().After(deadline) {
			t.Fatalf("sweep counters %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// counters reads the value of each metric names lists (0 when absent).
func counters(t *testing.T, reg *prometheus.Registry, names map[string]float64) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for name := range names {
		got[name] = 0
	}
	for _, mf := range mfs {
		if _, ok := names[mf.GetName()]; ok && len(mf.GetMetric()) == 1 {
			got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return got
}

// waitGone polls until none of keys is in the blob store.
func waitGone(t *testing.T, e *env, keys ...string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		var left []string
		for _, k := range keys {
			if _, err := e.blobs.Stat(context.Background(), k); !errors.Is(err, blob.ErrNotFound) {
				left = append(left, k)
			}
		}
		if len(left) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("still in the store: %v", left)
		}
	}
}
