// Package s3test starts a real S3-compatible server for tests: gofakes3's own
// command (a go.mod tool dependency), built and run as a separate process on a
// loopback port with a bolt database in the test's temporary directory.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/blob"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// build compiles the server once per test binary.
func build() (string, error) {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vidfarm-s3test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "gofakes3")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/johannesboyne/gofakes3/cmd/gofakes3").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build gofakes3: %v: %s", err, out)
		}
	})
	return binPath, buildErr
}

// Start runs a server with one bucket and returns the store configuration
// that reaches it. The process is killed when the test ends.
func Start(t testing.TB, bucket string) blob.S3Config {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-host", addr, "-backend", "bolt", "-bolt.db", filepath.Join(t.TempDir(), "s3.db"),
		"-initialbucket", bucket, "-quiet")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gofakes3: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	cfg := blob.S3Config{Endpoint: addr, Bucket: bucket, Region: "us-east-1", AccessKey: "test", SecretKey: "test-secret", Insecure: true}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := blob.NewS3Store(ctx, cfg)
		cancel()
		if err == nil {
			return cfg
		}
		if time.Now().After(deadline) {
			t.Fatalf("gofakes3 on %s did not come up: %v; stderr: %s", addr, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
