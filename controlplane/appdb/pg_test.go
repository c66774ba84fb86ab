package appdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// sharedDSN is the test Postgres: VIDFARM_TEST_PG, or the one make test starts.
func sharedDSN() string {
	if d := os.Getenv("VIDFARM_TEST_PG"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// noPostgres skips the test loudly, or fails it where make test asks for every tool.
func noPostgres(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("VIDFARM_REQUIRE_TOOLS") != "" {
		t.Fatalf("no PostgreSQL (%s) and VIDFARM_REQUIRE_TOOLS is set: run scripts/deps.sh", why)
	}
	t.Skipf("SKIPPING: no PostgreSQL for the app-database tests (%s); set VIDFARM_TEST_PG or run scripts/deps.sh", why)
}

// NewTestDB returns the DSN of a fresh schema on the shared test server, dropped
// when the test ends, so tests never see each other's tables.
func NewTestDB(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, sharedDSN())
	if err != nil {
		noPostgres(t, err.Error())
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "vftest_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, sharedDSN()); err == nil {
			_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			_ = c.Close(ctx)
		}
	})
	return withParam(sharedDSN(), "search_path", schema)
}

func withParam(dsn, k, v string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + k + "=" + v
}

// OpenPool connects to dsn for the test's own queries.
func OpenPool(t testing.TB, dsn string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Cluster is a throwaway PostgreSQL server of the test's own, which it may stop
// and start (the shared one must keep running for the other tests).
type Cluster struct {
	t       testing.TB
	bin     string
	dir     string
	port    int
	asUser  []string // runuser prefix when running as root
	running bool
}

// StartCluster initdbs and starts a server on a free loopback port.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Sort(dirs)
	if len(dirs) == 0 {
		noPostgres(t, "no server binaries under /usr/lib/postgresql/*/bin")
	}
	c := &Cluster{t: t, bin: dirs[len(dirs)-1]}
	dir, err := os.MkdirTemp("", "vidfarm-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c.dir = filepath.Join(dir, "data")
	if os.Geteuid() == 0 {
		// initdb refuses root: the cluster belongs to the postgres user.
		u, err := user.Lookup("postgres")
		if err != nil {
			noPostgres(t, "running as root and there is no postgres user")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	c.run("initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	c.port = unusedPort(t)
	c.Start()
	t.Cleanup(func() {
		if c.running {
			c.Stop()
		}
	})
	return c
}

func (c *Cluster) run(prog string, args ...string) {
	c.t.Helper()
	argv := append(append(slices.Clone(c.asUser), filepath.Join(c.bin, prog)), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", prog, err, out)
	}
}

// DSN addresses the cluster's postgres database.
func (c *Cluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Start starts the server and waits until it takes connections.
func (c *Cluster) Start() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.dir, "-w", "-l", filepath.Join(c.dir, "log"), "start",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -F", c.port, c.dir))
	c.running = true
}

// Stop stops the server (fast: open sessions are cut, as in an outage).
func (c *Cluster) Stop() {
	c.t.Helper()
	c.run("pg_ctl", "-D", c.dir, "-w", "-m", "fast", "stop")
	c.running = false
}

// unusedPort is a free loopback port below the kernel's ephemeral range
// (32768 and up on Linux), so that no other process's ephemeral bind takes
// it between this check and postgres binding it (and binding it again on a
// restart).
func unusedPort(t testing.TB) int {
	t.Helper()
	for range 200 {
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+mrand.IntN(12000))); err == nil {
			defer ln.Close()
			return ln.Addr().(*net.TCPAddr).Port
		}
	}
	t.Fatal("no free loopback port in 20000–31999")
	return 0
}
