package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vidfarm/vidfarm/controlplane/fsm"
	"github.com/vidfarm/vidfarm/controlplane/httpguard"
)

// HTTPLimits bound what one client can hold of the public, admin and agent
// listeners: how long a request may take on the wire, by kind of route, and
// (public listener) how many connections one address may keep open. Each zero
// field takes its Default value.
//
// Every timeout counts from a moment that does not include the handler's own
// work: a body's from the end of the headers, an answer's from its first byte.
// So the lease long-poll (up to a minute of waiting) and a video create that
// waits for a commit need no larger budget than any JSON call.
type HTTPLimits struct {
	// HeaderTimeout bounds the request line, the headers and a TLS handshake.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the arrival of an ordinary (JSON) request body.
	BodyTimeout time.Duration
	// WriteTimeout bounds sending an ordinary answer.
	WriteTimeout time.Duration
	// UploadTimeout bounds the arrival of the bytes PUT to an upload_url
	// (POST /v1/uploads, POST /v1/assets): at most MaxUploadBytes.
	UploadTimeout time.Duration
	// TransferTimeout bounds the large streams, either way: file downloads
	// (GET /files/), agents' artifact uploads and task-input downloads (up to
	// 2 GiB), admin backups and restores.
	TransferTimeout time.Duration
	// MaxConnsPerIP caps the connections one client address (IPv6: its /64)
	// holds open on the public listener at once; over it, a new connection is
	// closed at once. Negative: no limit.
	MaxConnsPerIP int
	// ConnLimitExempt are the client addresses MaxConnsPerIP does not apply
	// to: the reverse proxies and load balancers in front of the farm, through
	// which every client arrives from one address. nil means loopback (a
	// proxy on the same host, a local bench); empty (not nil) means none. The
	// cluster's other nodes, which forward their clients' requests to the
	// leader, are always exempt (by the IP of their Raft address).
	ConnLimitExempt []netip.Prefix
}

// Defaults of HTTPLimits.
const (
	// DefaultHeaderTimeout: headers are a few hundred bytes; 10 s is long for
	// any client that means to send them.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout: a JSON body is under 256 KB and usually under 4 KB;
	// 30 s lets the largest arrive at 9 KB/s (a poor mobile link) and ends a
	// body trickled a byte at a time after 30 s instead of never.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultWriteTimeout: an answer is at most a few hundred KB (a page of
	// 100 videos); a client that has not taken it in 30 s is not reading.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultUploadTimeout: an upload is at most 20 MiB; 10 minutes is
	// 35 KB/s, slower than any uplink a client uploading images has.
	DefaultUploadTimeout = 10 * time.Minute
	// DefaultTransferTimeout: a finished video or an artifact is hundreds of
	// MB, at most 2 GiB; an hour is 600 KB/s for the largest, and a node or
	// viewer slower than that is better served by a retry.
	DefaultTransferTimeout = time.Hour
	// DefaultMaxConnsPerIP is far above what one honest client holds (a
	// browser 6, a client pool tens, `vidfarm bench create` its concurrency,
	// 64 by default) and low enough that one address cannot hold the
	// node's sockets and goroutines.
	DefaultMaxConnsPerIP = 256
	// idleTimeout closes a kept-alive connection nobody sends on.
	idleTimeout = 2 * time.Minute
)

// withDefaults fills the zero fields.
func (l HTTPLimits) withDefaults() HTTPLimits {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&l.HeaderTimeout, DefaultHeaderTimeout)
	set(&l.BodyTimeout, DefaultBodyTimeout)
	set(&l.WriteTimeout, DefaultWriteTimeout)
	set(&l.UploadTimeout, DefaultUploadTimeout)
	set(&l.TransferTimeout, DefaultTransferTimeout)
	if l.MaxConnsPerIP == 0 {
		l.MaxConnsPerIP = DefaultMaxConnsPerIP
	}
	if l.ConnLimitExempt == nil {
		l.ConnLimitExempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
	return l
}

// route gives the requests of one method under a path prefix their own budget.
type route struct {
	method, prefix string
	budget         httpguard.Budget
}

// httpGuards are the deadlines of the three listeners.
type httpGuards struct {
	limits               HTTPLimits
	public, admin, agent *httpguard.Deadlines
	conns                *httpguard.Listener // nil: no connection limit
}

func newHTTPGuards(cfg Config) *httpGuards {
	l := cfg.HTTP
	ordinary := httpguard.Budget{Read: l.BodyTimeout, Write: l.WriteTimeout}
	upload := httpguard.Budget{Read: l.UploadTimeout, Write: l.WriteTimeout}
	pushed := httpguard.Budget{Read: l.TransferTimeout, Write: l.WriteTimeout}
	pulled := httpguard.Budget{Read: l.BodyTimeout, Write: l.TransferTimeout}
	guard := func(name string, routes ...route) *httpguard.Deadlines {
		return &httpguard.Deadlines{Name: name, Logger: cfg.Logger, Pick: func(r *http.Request) httpguard.Budget {
			for _, rt := range routes {
				if r.Method == rt.method && strings.HasPrefix(r.URL.Path, rt.prefix) {
					return rt.budget
				}
			}
			return ordinary
		}}
	}
	return &httpGuards{
		limits: l,
		public: guard("public",
			route{http.MethodPut, "/files/", upload},
			route{http.MethodGet, "/files/", pulled},
			route{http.MethodHead, "/files/", pulled}),
		admin: guard("admin",
			route{http.MethodPost, "/admin/v1/restore", pushed},
			route{http.MethodGet, "/admin/v1/backup", pulled},
			// A CPU profile or trace answers after the seconds it was asked for.
			route{http.MethodGet, "/debug/pprof/", pulled}),
		agent: guard("agent",
			route{http.MethodPut, "/agent/v1/blobs/", pushed},
			route{http.MethodGet, "/agent/v1/blobs/", pulled}),
	}
}

// server is an http.Server for one listener, its handler behind d.
func (g *httpGuards) server(d *httpguard.Deadlines, h http.Handler) *http.Server {
	return &http.Server{Handler: d.Wrap(h), ReadHeaderTimeout: g.limits.HeaderTimeout, IdleTimeout: idleTimeout}
}

// limitConns applies MaxConnsPerIP to the public listener. members lists the
// cluster, whose other nodes are exempt.
func (g *httpGuards) limitConns(ln net.Listener, self string, members func() []fsm.Member) net.Listener {
	if g.limits.MaxConnsPerIP < 0 {
		return ln
	}
	exempt := g.limits.ConnLimitExempt
	g.conns = httpguard.LimitConns(ln, g.limits.MaxConnsPerIP, func(a netip.Addr) bool {
		for _, p := range exempt {
			if p.Contains(a) {
				return true
			}
		}
		for _, m := range members() {
			host, _, err := net.SplitHostPort(m.RaftAddr)
			if ip, perr := netip.ParseAddr(host); m.ID != self && err == nil && perr == nil && ip.Unmap() == a {
				return true
			}
		}
		return false
	})
	return g.conns
}

// Describe and Collect export the guards' counts.
func (g *httpGuards) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(g, ch) }

var (
	bodyTimeoutsDesc = prometheus.NewDesc("vidfarm_http_body_timeouts_total",
		"Requests answered 408 because their body did not arrive before its deadline, by listener.", []string{"listener"}, nil)
	connsRefusedDesc = prometheus.NewDesc("vidfarm_http_connections_refused_total",
		"Connections to the public listener closed because their address held --max-conns-per-ip already.", nil, nil)
)

func (g *httpGuards) Collect(ch chan<- prometheus.Metric) {
	for _, d := range []*httpguard.Deadlines{g.public, g.admin, g.agent} {
		ch <- prometheus.MustNewConstMetric(bodyTimeoutsDesc, prometheus.CounterValue, float64(d.Timeouts()), d.Name)
	}
	var refused uint64
	if g.conns != nil {
		refused = g.conns.Refused()
	}
	ch <- prometheus.MustNewConstMetric(connsRefusedDesc, prometheus.CounterValue, float64(refused))
}
