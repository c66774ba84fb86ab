package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPlainRaft(t *testing.T) {
	withTLS := TLSConfig{RaftCertFile: "c.pem", RaftKeyFile: "k.pem", RaftCAFile: "ca.pem"}
	cases := []struct {
		listen  string
		c       TLSConfig
		refused bool
		warned  bool
	}{
		{"127.0.0.1:7000", TLSConfig{}, false, false},
		{"[::1]:7000", TLSConfig{}, false, false},
		{"localhost:7000", TLSConfig{}, false, false},
		{"127.0.0.1:0", TLSConfig{}, false, false},
		{"0.0.0.0:7000", TLSConfig{}, true, false},
		{":7000", TLSConfig{}, true, false},
		{"[::]:7000", TLSConfig{}, true, false},
		{"10.0.0.1:7000", TLSConfig{}, true, false},
		{"vidfarm-0.vidfarm-peer:7000", TLSConfig{}, true, false},
		{"0.0.0.0:7000", TLSConfig{RaftInsecure: true}, false, true},
		{"10.0.0.1:7000", withTLS, false, false},
	}
	for _, tc := range cases {
		var logs bytes.Buffer
		err := checkPlainRaft(tc.listen, tc.c, slog.New(slog.NewTextHandler(&logs, nil)))
		if refused := errors.Is(err, ErrPlainRaft); refused != tc.refused {
			t.Errorf("%s %+v: %v, want refused %v", tc.listen, tc.c, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "--raft-insecure") {
			t.Errorf("%s: %v does not say how to go on", tc.listen, err)
		}
		if warned := strings.Contains(logs.String(), "level=WARN"); warned != tc.warned {
			t.Errorf("%s %+v: warned %v (%q), want %v", tc.listen, tc.c, warned, logs.String(), tc.warned)
		}
	}
}

// A node refused for plain Raft writes nothing: not even its data dir.
func TestStartRefusesPlainRaftFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", AdminListen: "127.0.0.1:0",
		RaftListen: "0.0.0.0:0", AdminToken: "a-long-enough-admin-token", Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, ErrPlainRaft) {
		t.Fatalf("start with plain Raft on 0.0.0.0: %v, want ErrPlainRaft", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused node made its data dir (%v)", err)
	}
}

func TestCheckRaftAdvertise(t *testing.T) {
	for _, tc := range []struct {
		listen, advertise string
		refused           bool
	}{
		{"0.0.0.0:7000", "", true},
		{"[::]:7000", "", true},
		{":7000", "", true},
		{"0.0.0.0:7000", "10.0.0.1:7000", false},
		{"10.0.0.1:7000", "", false},
		{"127.0.0.1:0", "", false},
	} {
		err := checkRaftAdvertise(tc.listen, tc.advertise)
		if (err != nil) != tc.refused {
			t.Errorf("%s, advertise %q: %v, want refused %v", tc.listen, tc.advertise, err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "--raft-advertise") {
			t.Errorf("%s: %v does not name --raft-advertise", tc.listen, err)
		}
	}
}
