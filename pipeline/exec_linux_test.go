package pipeline

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitGone polls until process pid has ended (gone, or a zombie waiting
// for its new parent to reap it), failing the test after 10 s.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		// state is the field after the command's parenthesised name
		if i := strings.LastIndexByte(string(b), ')'); err == nil && i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d the program left is still running", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not a wait for an event
	}
}
