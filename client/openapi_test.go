package client

import (
	"encoding/json"
	"maps"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestTypesMatchOpenAPI keeps the SDK's types and the served OpenAPI document
// in step: every property of a schema has a field with the same JSON name, and
// every field is a property. A field added on either side without the other
// fails here.
func TestTypesMatchOpenAPI(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	loadOpenAPI(t, &doc)
	s := doc.Components.Schemas
	cases := []struct {
		schema string
		props  map[string]schema
		typ    any
	}{
		{"Video", nil, Video{}},
		{"VideoProgress", nil, VideoProgress{}},
		{"VideoProgress.eta_seconds", s["VideoProgress"].Properties["eta_seconds"].Properties, ETA{}},
		{"VideoError", nil, VideoError{}},
		{"VideoPreview", nil, VideoPreview{}},
		{"VideoCancellation", nil, VideoCancellation{}},
		{"VideoList", nil, List[Video]{}},
		{"ModelList", nil, List[Model]{}},
		{"VoiceList", nil, List[Voice]{}},
		{"Error", nil, wireError{}},
		{"AutoVideoRequest", nil, AutoVideoRequest{}},
		{"ManualVideoRequest", nil, ManualVideoRequest{}},
		{"Account", nil, Account{}},
		{"Account.links", s["Account"].Properties["links"].Properties, AccountLinks{}},
		{"Model", nil, Model{}},
		{"Voice", nil, Voice{}},
		{"Event", nil, Event{}},
		{"EventList", nil, EventList{}},
		{"Event.data", s["Event"].Properties["data"].Properties, EventData{}},
		{"WebhookEndpointCreated", nil, WebhookEndpoint{}},
		{"WebhookEndpointList", nil, List[WebhookEndpoint]{}},
		{"WebhookDelivery", nil, WebhookDelivery{}},
		{"WebhookDeliveryAttempt", nil, DeliveryAttempt{}},
		{"WebhookDeliveryList", nil, DeliveryList{}},
		{"CreateWebhookRequest", nil, CreateWebhookRequest{}},
		{"WebhookDeleted", nil, WebhookDeleted{}},
		{"Folder", nil, Folder{}},
		{"FolderList", nil, List[Folder]{}},
		{"Avatar", nil, Avatar{}},
		{"Avatar.error", s["Avatar"].Properties["error"].Properties, MediaError{}},
		{"AvatarList", nil, List[Avatar]{}},
		{"CreateAvatarRequest", nil, CreateAvatarRequest{}},
		{"CreateSpeechRequest", nil, CreateSpeechRequest{}},
		{"Speech", nil, Speech{}},
		{"Speech.error", s["Speech"].Properties["error"].Properties, MediaError{}},
		{"BrandKit", nil, BrandKit{}},
		{"BrandKitList", nil, List[BrandKit]{}},
		{"CreateBrandKitRequest", nil, CreateBrandKitRequest{}},
		{"Deleted", nil, Deleted{}},
		{"CreateUploadRequest", nil, CreateUploadRequest{}},
		{"Upload", nil, Upload{}},
		{"CreateAssetRequest", nil, CreateAssetRequest{}},
		{"Asset", nil, Asset{}},
		{"CreatedAsset", nil, CreatedAsset{}},
		{"AssetList", nil, List[Asset]{}},
	}
	for _, tc := range cases {
		t.Run(tc.schema, func(t *testing.T) {
			props := tc.props
			if props == nil {
				sc, ok := s[tc.schema]
				if !ok {
					t.Fatalf("no schema %s in the OpenAPI document", tc.schema)
				}
				props = sc.Properties
			}
			if len(props) == 0 {
				t.Fatalf("schema %s has no properties", tc.schema)
			}
			var want []string
			for p := range props {
				want = append(want, p)
			}
			got := jsonNames(reflect.TypeOf(tc.typ))
			slices.Sort(want)
			for _, p := range want {
				if !slices.Contains(got, p) {
					t.Errorf("property %s.%s has no field in %T", tc.schema, p, tc.typ)
				}
			}
			for _, f := range got {
				if !slices.Contains(want, f) {
					t.Errorf("%T has field %q that schema %s does not define", tc.typ, f, tc.schema)
				}
			}
		})
	}
}

type schema struct {
	Properties map[string]schema `json:"properties"`
}

// jsonNames are the JSON names of t's fields, an embedded struct's fields
// promoted as encoding/json does.
func jsonNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
	}
	return out
}

// TestQueryMatchesOpenAPI: the query parameters a list call can send are
// those its operation defines, no more, no fewer.
func TestQueryMatchesOpenAPI(t *testing.T) {
	type param struct {
		Name string `json:"name"`
		In   string `json:"in"`
		Ref  string `json:"$ref"`
	}
	var doc struct {
		Paths map[string]struct {
			Get struct {
				Parameters []param `json:"parameters"`
			} `json:"get"`
		} `json:"paths"`
		Components struct {
			Parameters map[string]param `json:"parameters"`
		} `json:"components"`
	}
	loadOpenAPI(t, &doc)
	cases := []struct {
		path  string
		query url.Values
	}{
		{"/v1/videos", ListVideosParams{Status: "queued", FolderID: "fld_1", Limit: 1, StartingAfter: "vid_1"}.query()},
		{"/v1/voices", ListVoicesParams{Language: "en", Gender: "male", Search: "us", Limit: 1, StartingAfter: "en-gb"}.query()},
		{"/v1/avatars", ListAvatarsParams{View: AvatarViewCatalogue, Search: "a", Gender: "female", Limit: 1, StartingAfter: "av_x"}.query()},
		{"/v1/brand-kits", pageQuery(1, "br_1")},
		{"/v1/assets", pageQuery(1, "as_1")},
	}
	for _, tc := range cases {
		var want []string
		for _, p := range doc.Paths[tc.path].Get.Parameters {
			if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				p = doc.Components.Parameters[name]
			}
			if p.In == "query" {
				want = append(want, p.Name)
			}
		}
		got := slices.Sorted(maps.Keys(tc.query))
		slices.Sort(want)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("GET %s: the SDK sends %v, the document defines %v", tc.path, got, want)
		}
	}
}

// TestCodesMatchOpenAPI: a Code constant for every value of ErrorCode, and no other.
func TestCodesMatchOpenAPI(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	loadOpenAPI(t, &doc)
	want := doc.Components.Schemas.ErrorCode.Enum
	got := slices.Clone(codes)
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("Code constants %v, ErrorCode enum %v", got, want)
	}
}

// loadOpenAPI decodes the document the server serves (GET /v1/openapi.json)
// into doc.
func loadOpenAPI(t *testing.T, doc any) {
	t.Helper()
	b, err := os.ReadFile("../controlplane/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, doc); err != nil {
		t.Fatal(err)
	}
}
