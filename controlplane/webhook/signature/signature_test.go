package signature_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/webhook/signature"
)

const secret = "whsec_test_secret_0123456789"

var (
	body = []byte(`{"id":"evt_abc","object":"event","type":"video.completed","created":1763700000,"data":{"video":{"id":"vid_abc"}}}`)
	at   = time.Unix(1763700000, 0)
)

func TestVerify(t *testing.T) {
	good := signature.Header(secret, at, body)
	other := signature.Compute("whsec_other", at.Unix(), body)
	cases := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", good, body, at, nil},
		{"valid 4m59s later", good, body, at.Add(4*time.Minute + 59*time.Second), nil},
		{"too old", good, body, at.Add(5*time.Minute + time.Second), signature.ErrOutsideTolerance},
		{"from the future", good, body, at.Add(-6 * time.Minute), signature.ErrOutsideTolerance},
		{"body changed", good, append([]byte(" "), body...), at, signature.ErrMismatch},
		{"wrong secret", "t=1763700000,v1=" + other, body, at, signature.ErrMismatch},
		{"rotation: one of two matches", "t=1763700000,v1=" + other + ",v1=" + signature.Compute(secret, at.Unix(), body), body, at, nil},
		{"time changed", strings.Replace(good, "t=1763700000", "t=1763700001", 1), body, at, signature.ErrMismatch},
		{"missing", "", body, at, signature.ErrMissing},
		{"no v1", "t=1763700000", body, at, signature.ErrMalformed},
		{"no t", "v1=" + other, body, at, signature.ErrMalformed},
		{"short v1", "t=1763700000,v1=abcd", body, at, signature.ErrMalformed},
		{"not key=value", "t=1763700000,garbage", body, at, signature.ErrMalformed},
		{"two t", "t=1,t=2,v1=" + other, body, at, signature.ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := signature.Verify(secret, tc.header, tc.body, tc.now, 0)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// independent runs another implementation of HMAC-SHA256 as a real process and
// returns its hex digest of "<t>.<body>".
func independent(t *testing.T, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s not installed (scripts/deps.sh installs it): %v", name, err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(strconv.FormatInt(at.Unix(), 10) + "." + string(body))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	f := strings.Fields(string(out))
	return f[len(f)-1] // openssl prints "SHA2-256(stdin)= <hex>"
}

func TestSignatureMatchesIndependentImplementations(t *testing.T) {
	for _, tc := range []struct {
		name string
		prog string
		args []string
	}{
		{"openssl", "openssl", []string{"dgst", "-sha256", "-hmac", secret}},
		{"python3 hmac", "python3", []string{"-c", "import hmac,hashlib,sys;print(hmac.new(sys.argv[1].encode(),sys.stdin.buffer.read(),hashlib.sha256).hexdigest())", secret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hexsig := independent(t, tc.prog, tc.args...)
			if got := signature.Compute(secret, at.Unix(), body); got != hexsig {
				t.Fatalf("Compute = %s, %s says %s", got, tc.prog, hexsig)
			}
			h := fmt.Sprintf("t=%d,v1=%s", at.Unix(), hexsig)
			if err := signature.Verify(secret, h, body, at.Add(time.Minute), signature.DefaultTolerance); err != nil {
				t.Fatalf("Verify refused %s's signature: %v", tc.prog, err)
			}
		})
	}
}

func ExampleVerify() {
	// In a receiver's handler: read the raw body first, verify, then parse.
	raw := []byte(`{"id":"evt_1","object":"event","type":"video.failed"}`)
	header := signature.Header("whsec_example", time.Unix(1763700000, 0), raw) // what the farm sends
	err := signature.Verify("whsec_example", header, raw, time.Unix(1763700060, 0), signature.DefaultTolerance)
	fmt.Println(err)
	// Output: <nil>
}

func BenchmarkVerify(b *testing.B) {
	h := signature.Header(secret, at, body)
	for b.Loop() {
		if err := signature.Verify(secret, h, body, at, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// HeaderAll signs with each secret, in order, under one t: during a rotation
// a receiver that knows either secret accepts, one that knows neither does not.
func TestHeaderAllTwoSecrets(t *testing.T) {
	h := signature.HeaderAll(at, body, "whsec_new", secret)
	want := "t=1763700000,v1=" + signature.Compute("whsec_new", at.Unix(), body) + ",v1=" + signature.Compute(secret, at.Unix(), body)
	if h != want {
		t.Fatalf("header %q, want %q", h, want)
	}
	if one := signature.HeaderAll(at, body, secret); one != signature.Header(secret, at, body) {
		t.Fatalf("one secret: %q, want Header's %q", one, signature.Header(secret, at, body))
	}
	for _, tc := range []struct {
		secret string
		want   error
	}{{"whsec_new", nil}, {secret, nil}, {"whsec_other", signature.ErrMismatch}} {
		if err := signature.Verify(tc.secret, h, body, at, 0); !errors.Is(err, tc.want) {
			t.Errorf("verify with %s: %v, want %v", tc.secret, err, tc.want)
		}
	}
}
