package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// netProxy carries one kind of the cluster's traffic (Raft, or one HTTP
// listener): every node publishes its proxy's address, so each connection
// one node opens to node i goes through proxy i. To partition, the proxy
// must know which node dialled: on loopback every connection comes from
// 127.0.0.1, so it looks the dialling socket up in /proc/net/tcp and finds
// the process that holds it (Linux only).
type netProxy struct {
	t    *testing.T
	pids func() []int // the nodes' process ids (0 while down)
	mu   sync.Mutex
	cut  map[int]bool // nodes on the minority side
	// conns are the open connections, from node (-1: unknown) to node.
	conns map[net.Conn][2]int
	lns   []net.Listener
}

// newNetProxy listens once per node; serve says where each one leads.
func newNetProxy(t *testing.T, n int, pids func() []int) *netProxy {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("the proxy tells nodes apart through /proc/net/tcp (Linux)")
	}
	p := &netProxy{t: t, pids: pids, cut: map[int]bool{}, conns: map[net.Conn][2]int{}}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.lns = append(p.lns, ln)
	}
	t.Cleanup(func() {
		for _, ln := range p.lns {
			ln.Close()
		}
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

// addr is the address node i advertises.
func (p *netProxy) addr(i int) string { return p.lns[i].Addr().String() }

// serve forwards connections for node i to its port.
func (p *netProxy) serve(i, port int) {
	target := "127.0.0.1:" + strconv.Itoa(port)
	go func() {
		for {
			in, err := p.lns[i].Accept()
			if err != nil {
				return
			}
			go p.pipe(in, p.source(in), i, target)
		}
	}()
}

func (p *netProxy) pipe(in net.Conn, from, to int, target string) {
	blocked := func() bool { return p.cut[from] != p.cut[to] || (from < 0 && len(p.cut) > 0) }
	p.mu.Lock()
	early := blocked()
	p.mu.Unlock()
	if early {
		in.Close()
		return
	}
	out, err := net.Dial("tcp", target)
	if err != nil {
		in.Close()
		return
	}
	// Checked again with the registration, under one lock: a cut made
	// while this connection was dialled would otherwise miss it (isolate
	// closes only the connections registered), and it carried Raft's
	// traffic across the cut (a cut-off leader once committed a write so).
	p.mu.Lock()
	late := blocked()
	if !late {
		p.conns[in], p.conns[out] = [2]int{from, to}, [2]int{from, to}
	}
	p.mu.Unlock()
	if late {
		in.Close()
		out.Close()
		return
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}

// isolate cuts node i off from the others: new connections across the cut
// are refused and open ones closed.
func (p *netProxy) isolate(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = map[int]bool{i: true}
	for c, ft := range p.conns {
		if p.cut[ft[0]] != p.cut[ft[1]] || ft[0] < 0 {
			c.Close()
		}
	}
}

// heal lets every connection through again.
func (p *netProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = map[int]bool{}
}

// source is the index of the node whose process holds the dialling end of
// in, or -1.
func (p *netProxy) source(in net.Conn) int {
	port := in.RemoteAddr().(*net.TCPAddr).Port
	inode := socketInode(port)
	if inode == "" {
		return -1
	}
	want := "socket:[" + inode + "]"
	for i, pid := range p.pids() {
		if pid == 0 {
			continue
		}
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if l, _ := os.Readlink(dir + "/" + fd.Name()); l == want {
				return i
			}
		}
	}
	return -1
}

// socketInode finds the inode of the IPv4 loopback socket bound to port.
func socketInode(port int) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == local {
			return fields[9]
		}
	}
	return ""
}
