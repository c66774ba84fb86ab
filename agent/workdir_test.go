package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCredentialKept: the node credential a registration got is kept in the
// work dir for the next run, readable by its owner only, replaced whole,
// and an empty work dir keeps none.
func TestCredentialKept(t *testing.T) {
	dir := t.TempDir()
	if got, err := loadCredential(dir); err != nil || got != "" {
		t.Fatalf("empty work dir: %q, %v", got, err)
	}
	for _, cred := range []string{"vfn_first", "vfn_second"} {
		if err := saveCredential(dir, cred); err != nil {
			t.Fatal(err)
		}
		if got, err := loadCredential(dir); err != nil || got != cred {
			t.Fatalf("kept %q, read %q, %v", cred, got, err)
		}
	}
	st, err := os.Stat(filepath.Join(dir, credentialFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credential file: %v, %v; want mode 0600", st, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("work dir holds %d entries, want the credential alone (no temporary file left)", len(entries))
	}
}
