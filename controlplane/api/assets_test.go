package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vidfarm/vidfarm/controlplane/api"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/fsm"
)

// withBlobStore serves e's state through a second API that has a blob store
// (newEnv's has none), for the endpoints that touch bytes.
func withBlobStore(t *testing.T, e *env) *env {
	t.Helper()
	store, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	a, err := api.New(api.Config{FSM: e.node.FSM, Store: e.node, Limits: api.Limits{Disabled: true}, Blobs: store,
		Signer: blob.Signer{Key: []byte("0123456789abcdef0123456789abcdef"), BaseURL: "http://" + srv.Listener.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	srv.Config.Handler = a
	srv.Start()
	t.Cleanup(srv.Close)
	out := *e
	out.api, out.srv = a, srv
	return &out
}

// TestDeleteAssetsNamed: DELETE /v1/assets, the contract's spelling (it
// answered 405), deletes the asset named by asset_id in the query or a JSON
// body as DELETE /v1/assets/{id} does, and without one says how to name it.
func TestDeleteAssetsNamed(t *testing.T) {
	e := withBlobStore(t, newEnv(t))
	_, key := e.account(fsm.PlanPro, 1000)
	newAsset := func() string {
		return e.do(http.MethodPost, "/v1/assets", key, `{"filename":"a.png","content_type":"image/png","size_bytes":10}`).
			wantStatus(t, http.StatusCreated).json(t)["id"].(string)
	}
	for _, tc := range []struct{ path, body, says string }{
		{"/v1/assets", "", "name the asset to delete"},
		{"/v1/assets?asset_id=", "", "name the asset to delete"},
		{"/v1/assets", `{}`, "name the asset to delete"},
		{"/v1/assets?id=as_1", "", `unknown query parameter "id"`},
		{"/v1/assets", `{"id":"as_1"}`, `unknown field "id"`},
		{"/v1/assets", `{"asset_id":7}`, `"asset_id" must be a string`},
		{"/v1/assets", `[]`, "must be a JSON object"},
		{"/v1/assets?asset_id=as_1", `{"asset_id":"as_1"}`, "both in the query and in the body"},
	} {
		er := e.do(http.MethodDelete, tc.path, key, tc.body).wantError(t, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(er["message"].(string), tc.says) || er["details"] == nil {
			t.Errorf("DELETE %s %s: %v, want it to say %q", tc.path, tc.body, er, tc.says)
		}
	}
	e.do(http.MethodDelete, "/v1/assets?asset_id=as_missing", key, "").wantError(t, http.StatusNotFound, "not_found")

	for _, by := range []string{"query", "body"} {
		id := newAsset()
		var r response
		if by == "query" {
			r = e.do(http.MethodDelete, "/v1/assets?asset_id="+id, key, "")
		} else {
			r = e.do(http.MethodDelete, "/v1/assets", key, `{"asset_id":"`+id+`"}`)
		}
		d := r.wantStatus(t, http.StatusOK).json(t)
		if d["id"] != id || d["object"] != "asset" || d["deleted"] != true {
			t.Errorf("by %s: %v", by, d)
		}
		e.do(http.MethodGet, "/v1/assets/"+id, key, "").wantError(t, http.StatusNotFound, "not_found")
		e.do(http.MethodDelete, "/v1/assets?asset_id="+id, key, "").wantError(t, http.StatusNotFound, "not_found")
	}
	// Another account's asset is not found, as by its path.
	id := newAsset()
	_, other := e.account(fsm.PlanPro, 10)
	e.do(http.MethodDelete, "/v1/assets?asset_id="+id, other, "").wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodDelete, "/v1/assets/"+id, key, "").wantStatus(t, http.StatusOK)
}
