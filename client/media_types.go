package client

// The schemas of avatars, speech samples, brand kits, uploads and assets.
// Fields the server sends as null are plain strings here, "" for null (an
// empty value is never a real one), and *int64 for times, as elsewhere in
// the package.

// Avatar kinds: stock presenters, and the account's own avatars drawn from
// a prompt or made from a photo.
const (
	AvatarKindStock  = "stock"
	AvatarKindPrompt = "prompt"
	AvatarKindPhoto  = "photo"
)

// Avatar statuses. A stock avatar is always ready.
const (
	AvatarPending    = "pending"
	AvatarProcessing = "processing"
	AvatarReady      = "ready"
	AvatarFailed     = "failed"
)

// Avatar list views (ListAvatarsParams.View).
const (
	// AvatarViewCharacters lists what can present an auto video: the
	// account's own avatars (newest first, every status), then the stock
	// presenters. It is the server's default.
	AvatarViewCharacters = "characters"
	// AvatarViewCatalogue lists the stock presenters only.
	AvatarViewCatalogue = "catalogue"
)

// Avatar is a stock presenter or one of the account's own avatars (the
// Avatar schema).
type Avatar struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	// Kind is AvatarKindStock, AvatarKindPrompt or AvatarKindPhoto.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Gender is female or male; "" for an own avatar created without one.
	Gender string `json:"gender"`
	// Owned is true for the account's own avatars.
	Owned bool `json:"owned"`
	// Status is AvatarPending until a render node takes it, AvatarProcessing
	// while it is made, then AvatarReady or AvatarFailed.
	Status string `json:"status"`
	// Prompt is what a prompt avatar was drawn from.
	Prompt string `json:"prompt,omitempty"`
	// ImageURL is a signed, expiring URL of the 512×512 PNG of a ready own
	// avatar (stock avatars have none: the render nodes draw them).
	ImageURL string `json:"image_url,omitempty"`
	// Error says why a failed avatar failed.
	Error *MediaError `json:"error,omitempty"`
	// CreatedAt is in Unix seconds; nil for a stock avatar.
	CreatedAt *int64 `json:"created_at,omitempty"`
	// PollIntervalSeconds is set while the avatar is pending or processing.
	PollIntervalSeconds int `json:"poll_interval_seconds,omitempty"`
}

// Final reports whether the avatar will not change any more: ready or failed.
func (a *Avatar) Final() bool { return a.Status == AvatarReady || a.Status == AvatarFailed }

// MediaError says why a render node could not make an avatar or a speech
// sample.
type MediaError struct {
	Message string `json:"message"`
}

// CreateAvatarRequest is the body of POST /v1/avatars (the
// CreateAvatarRequest schema). A prompt avatar takes Prompt; a photo avatar
// takes FileURL (a public https address, such as an Upload's PublicURL) or
// AssetID (a ready image asset), and Consent, which must be true. Zero
// values are left out: the server refuses a field of the other kind even
// when empty.
type CreateAvatarRequest struct {
	// Kind is AvatarKindPrompt or AvatarKindPhoto.
	Kind    string `json:"kind"`
	Name    string `json:"name,omitempty"`
	Gender  string `json:"gender,omitempty"`
	Prompt  string `json:"prompt,omitempty"`
	FileURL string `json:"file_url,omitempty"`
	AssetID string `json:"asset_id,omitempty"`
	// Consent confirms that the person pictured agreed to the use of their
	// likeness; a photo avatar without it is refused.
	Consent bool `json:"consent,omitempty"`
}

// CreateSpeechRequest is the body of POST /v1/voices/speech.
type CreateSpeechRequest struct {
	// Text is 1 to 300 characters.
	Text string `json:"text"`
	// VoiceID is a voice of the catalogue (Voices).
	VoiceID string `json:"voice_id"`
}

// Speech is a speech sample (the Speech schema). Status is one of
// StatusQueued, StatusProcessing, StatusCompleted and StatusFailed.
type Speech struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Status  string `json:"status"`
	VoiceID string `json:"voice_id"`
	Text    string `json:"text"`
	// AudioURL is a signed, expiring URL of the AAC audio (audio/mp4, .m4a)
	// once completed.
	AudioURL string `json:"audio_url,omitempty"`
	// DurationSeconds is the measured length of the audio once completed.
	DurationSeconds float64     `json:"duration_seconds,omitempty"`
	Error           *MediaError `json:"error,omitempty"`
	CreatedAt       int64       `json:"created_at"`
	// PollIntervalSeconds is set while the sample is queued or processing.
	PollIntervalSeconds int `json:"poll_interval_seconds,omitempty"`
}

// Final reports whether the sample will not change any more: completed or failed.
func (s *Speech) Final() bool { return s.Status == StatusCompleted || s.Status == StatusFailed }

// Brand kit motion styles (how lively the presenter of the kit's videos moves).
const (
	MotionCalm      = "calm"
	MotionSmooth    = "smooth"
	MotionDynamic   = "dynamic"
	MotionEnergetic = "energetic"
)

// BrandKit is a saved kit (Object "brand_kit") or a draft from
// BrandKitFromURL (Object "brand_kit_draft": ID "", CreatedAt nil,
// SourceURL set). The BrandKit schema.
type BrandKit struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Name   string `json:"name"`
	// Colors are "#rrggbb"; the first fills the captions' bar, the second is
	// its accent line.
	Colors []string `json:"colors"`
	// Fonts are family names; captions use the first the rendering node has.
	Fonts         []string `json:"fonts"`
	MotionStyle   string   `json:"motion_style"`
	BrandIdentity string   `json:"brand_identity"`
	LogoURL       string   `json:"logo_url"`
	LogoAssetID   string   `json:"logo_asset_id"`
	// CreatedAt is in Unix seconds; nil for a draft.
	CreatedAt *int64 `json:"created_at"`
	// SourceURL is the address a draft was drafted from.
	SourceURL string `json:"source_url,omitempty"`
}

// Request is the kit as a CreateBrandKitRequest: save a draft with
// CreateBrandKit(ctx, draft.Request()), after any changes.
func (k *BrandKit) Request() CreateBrandKitRequest {
	return CreateBrandKitRequest{Name: k.Name, Colors: k.Colors, Fonts: k.Fonts, MotionStyle: k.MotionStyle,
		BrandIdentity: k.BrandIdentity, LogoURL: k.LogoURL, LogoAssetID: k.LogoAssetID}
}

// CreateBrandKitRequest is the body of POST /v1/brand-kits. Name is
// required; zero values are left out. Give at most one of LogoURL (public
// https) and LogoAssetID (a ready asset of the account).
type CreateBrandKitRequest struct {
	Name          string   `json:"name"`
	Colors        []string `json:"colors,omitempty"` // up to 8, "#rgb" or "#rrggbb"
	Fonts         []string `json:"fonts,omitempty"`  // up to 5 family names
	MotionStyle   string   `json:"motion_style,omitempty"`
	BrandIdentity string   `json:"brand_identity,omitempty"`
	LogoURL       string   `json:"logo_url,omitempty"`
	LogoAssetID   string   `json:"logo_asset_id,omitempty"`
}

// Deleted is the answer of a delete (the Deleted schema).
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// CreateUploadRequest is the body of POST /v1/uploads.
type CreateUploadRequest struct {
	Filename string `json:"filename"`
	// ContentType is image/png, image/jpeg, image/webp or image/gif.
	ContentType string `json:"content_type"`
}

// Upload is where to PUT an image and the address to use it at (the Upload
// schema). Nothing is recorded on the server: the signatures are the upload.
type Upload struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	// UploadURL takes the bytes with UploadMethod (PUT) and UploadHeaders
	// until UploadExpiresAt (Unix seconds): PutUploadBytes does it.
	UploadURL       string            `json:"upload_url"`
	UploadMethod    string            `json:"upload_method"`
	UploadHeaders   map[string]string `json:"upload_headers"`
	UploadExpiresAt int64             `json:"upload_expires_at"`
	MaxSizeBytes    int64             `json:"max_size_bytes"`
	// PublicURL serves the bytes until PublicURLExpiresAt: use it as
	// image_url, first_frame_url, an avatar's file_url or a logo_url.
	PublicURL          string `json:"public_url"`
	PublicURLExpiresAt int64  `json:"public_url_expires_at"`
}

// UploadReceipt is the answer to the bytes PUT to an upload_url.
type UploadReceipt struct {
	Object      string `json:"object"`
	SizeBytes   int64  `json:"size_bytes"`
	ContentType string `json:"content_type"`
}

// Asset statuses.
const (
	AssetPending = "pending"
	AssetReady   = "ready"
)

// CreateAssetRequest is the body of POST /v1/assets.
type CreateAssetRequest struct {
	Filename string `json:"filename"`
	// ContentType is image/png, image/jpeg, image/webp or image/gif.
	ContentType string `json:"content_type"`
	// SizeBytes is the file's exact size, 1 to 20 MB.
	SizeBytes int64 `json:"size_bytes"`
}

// Asset is a file of the account (the Asset schema). ID and AssetID are the
// same as_ value: use it in file_asset_ids, as an avatar's asset_id or as a
// brand kit's logo_asset_id once the asset is ready.
type Asset struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	AssetID     string `json:"asset_id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	SizeBytes   int64  `json:"size_bytes"`
	// Status is AssetPending until CompleteAsset, then AssetReady.
	Status    string `json:"status"`
	CreatedAt int64  `json:"created_at"`
	// CompletedAt (Unix seconds) and URL (signed, expiring) are set once ready.
	CompletedAt *int64 `json:"completed_at"`
	URL         string `json:"url"`
}

// CreatedAsset is the answer of CreateAsset (the CreatedAsset schema): the
// pending asset and where to PUT its bytes (PutAssetBytes) until
// UploadExpiresAt.
type CreatedAsset struct {
	Asset
	UploadURL       string            `json:"upload_url"`
	UploadMethod    string            `json:"upload_method"`
	UploadHeaders   map[string]string `json:"upload_headers"`
	UploadExpiresAt int64             `json:"upload_expires_at"`
}
