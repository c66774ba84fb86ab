package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/admin"
	"github.com/vidfarm/vidfarm/controlplane/server"
	"github.com/vidfarm/vidfarm/controlplane/tlsconf"
)

// BenchmarkClusterWriteTLS measures what TLS costs a write: an admin create
// sent to a follower of a three-node cluster, forwarded to the leader and
// replicated, with everything plain and with https listeners and Raft over
// mutual TLS, and with each alone (the tlsconf test certificates, for
// 127.0.0.1).
//
//	go test -run '^$' -bench ClusterWriteTLS -benchtime 200x ./controlplane/server/
func BenchmarkClusterWriteTLS(b *testing.B) {
	const td = "../tlsconf/testdata/"
	files := server.TLSConfig{CertFile: td + "node.pem", KeyFile: td + "node-key.pem", CAFile: td + "ca.pem",
		RaftCertFile: td + "node.pem", RaftKeyFile: td + "node-key.pem", RaftCAFile: td + "ca.pem"}
	for _, bc := range []struct {
		name string
		tls  server.TLSConfig
	}{{"plain", server.TLSConfig{}}, {"tls", files}, {"raftonly", server.TLSConfig{RaftCertFile: files.RaftCertFile, RaftKeyFile: files.RaftKeyFile, RaftCAFile: files.RaftCAFile}}, {"httponly", server.TLSConfig{CertFile: files.CertFile, KeyFile: files.KeyFile, CAFile: files.CAFile}}} {
		b.Run(bc.name, func(b *testing.B) {
			nodes := startCluster(b, bc.tls)
			defer func() {
				for _, n := range nodes {
					_ = n.Close(context.Background())
				}
			}()
			scheme, hc := "http://", &http.Client{Timeout: 10 * time.Second}
			if bc.tls.CertFile != "" {
				cfg, err := tlsconf.Client(files.CAFile)
				if err != nil {
					b.Fatal(err)
				}
				scheme, hc.Transport = "https://", &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
			}
			follower := nodes[1]
			if follower.Node.IsLeader() {
				follower = nodes[2]
			}
			cl := &admin.Client{Server: scheme + follower.AdminAddr(), Token: "bench-admin-token", HTTP: hc}
			b.ResetTimer()
			for range b.N {
				if _, err := cl.CreateAccount(context.Background(), "bench", "pro", 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
