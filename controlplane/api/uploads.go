package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
	"github.com/vidfarm/vidfarm/controlplane/blob"
	"github.com/vidfarm/vidfarm/controlplane/ids"
)

// Limits of uploads. Every use the contract names for an upload (image_url,
// first_frame_url, file_url, logo_url, file_asset_ids, an avatar's asset_id,
// logo_asset_id) is an image, and render agents fetch input images of at most
// 20 MiB (agent.MaxInputImageBytes), so that is the largest upload too: a
// larger one could be stored but never rendered.
const (
	MaxUploadBytes = 20 << 20
	maxFilename    = 255
	// uploadURLTTL is how long an upload_url accepts the bytes.
	uploadURLTTL = time.Hour
	// publicURLTTL is how long the public_url of an upload can be fetched:
	// long enough for a video to wait in the queue and be rendered.
	publicURLTTL = 7 * 24 * time.Hour
)

// uploadTypes are the media types an upload or asset may declare, with the
// extension its blob key gets (the key's extension is how a PUT knows the
// declared type and how GET /files/ answers it).
var uploadTypes = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/webp": ".webp",
	"image/gif":  ".gif",
}

func uploadTypeNames() []string {
	out := make([]string, 0, len(uploadTypes))
	for t := range uploadTypes {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// parseFileFields reads and checks the filename and content_type of an upload
// or asset request.
func parseFileFields(o object) (filename, contentType string, e *apierr.Error) {
	filename, present, e := o.str("filename")
	if e != nil {
		return "", "", e
	}
	n := utf8.RuneCountInString(filename)
	switch {
	case !present || strings.TrimSpace(filename) == "":
		return "", "", apierr.Invalid("filename", `field "filename" is required: the file's name, such as "logo.png"`)
	case n > maxFilename:
		return "", "", apierr.Invalid("filename", fmt.Sprintf("filename has %d characters; the limit is %d", n, maxFilename)).With("max_length", maxFilename)
	case strings.ContainsAny(filename, `/\`) || strings.IndexFunc(filename, unicode.IsControl) >= 0:
		return "", "", apierr.Invalid("filename", "filename must be a plain file name, without slashes or control characters")
	}
	ct, present, e := o.str("content_type")
	if e != nil {
		return "", "", e
	}
	if !present {
		return "", "", apierr.Invalid("content_type", `field "content_type" is required`).With("allowed", uploadTypeNames())
	}
	if _, ok := uploadTypes[strings.ToLower(ct)]; !ok {
		return "", "", apierr.Invalid("content_type", fmt.Sprintf("content_type %q is not accepted; uploads are images", ct)).
			With("allowed", uploadTypeNames())
	}
	return filename, strings.ToLower(ct), nil
}

type uploadJSON struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Filename           string            `json:"filename"`
	ContentType        string            `json:"content_type"`
	UploadURL          string            `json:"upload_url"`
	UploadMethod       string            `json:"upload_method"`
	UploadHeaders      map[string]string `json:"upload_headers"`
	UploadExpiresAt    int64             `json:"upload_expires_at"`
	MaxSizeBytes       int64             `json:"max_size_bytes"`
	PublicURL          string            `json:"public_url"`
	PublicURLExpiresAt int64             `json:"public_url_expires_at"`
}

// UploadsPrefix is where the bytes of POST /v1/uploads go in the blob store.
// Nothing else records an upload, so the server deletes them by age.
const UploadsPrefix = "uploads/"

// createUpload answers POST /v1/uploads: a presigned PUT address for the bytes
// and the signed public address to use as an image_url. Nothing is recorded:
// the signatures are the whole upload.
func (a *API) createUpload(w http.ResponseWriter, r *http.Request) {
	o, e := a.readObject(r, "filename", "content_type")
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	filename, ct, e := parseFileFields(o)
	if e == nil {
		e = a.lim.check(r.Context(), a.lim.media, "uploads, avatars, speech and brand-from-url", principalOf(r).AccountID)
	}
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	id := ids.New("up")
	key := UploadsPrefix + id + uploadTypes[ct] // no account id: the key is in public URLs
	now := a.cfg.Now()
	putExp, getExp := now.Add(uploadURLTTL), now.Add(publicURLTTL)
	apierr.WriteJSON(w, http.StatusCreated, uploadJSON{
		ID: id, Object: "upload", Filename: filename, ContentType: ct,
		UploadURL: a.cfg.Signer.PutURL("/files/"+key, putExp), UploadMethod: http.MethodPut,
		UploadHeaders: map[string]string{"Content-Type": ct}, UploadExpiresAt: putExp.Unix(), MaxSizeBytes: MaxUploadBytes,
		PublicURL: a.fileURL(key, getExp), PublicURLExpiresAt: getExp.Unix(),
	})
}

// readObject reads a JSON object body that may hold only the given fields.
func (a *API) readObject(r *http.Request, fields ...string) (object, *apierr.Error) {
	body, e := readBody(r)
	if e != nil {
		return nil, e
	}
	o, e := decodeObject(body)
	if e == nil {
		e = o.checkFields(fields...)
	}
	return o, e
}

// isFilePut reports whether r uploads bytes to a presigned URL; those bodies
// are not JSON and have their own limit.
func isFilePut(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/files/")
}

// putFile stores the bytes PUT to a presigned upload_url (of an upload or of
// an asset). The signature is the credential. The body must declare the
// content type the URL was made for, fit the size limit, and sniff as that
// type; otherwise nothing is stored.
func (a *API) putFile(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Signer.VerifyPut(r.URL.Path, r.URL.Query(), a.cfg.Now()); err != nil {
		apierr.Write(w, r, apierr.New(http.StatusForbidden, apierr.CodeInvalidRequest,
			"this upload URL is invalid or has expired; ask for a new one (POST /v1/uploads or POST /v1/assets)").With("reason", err.Error()))
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/files/")
	limit, e := a.putLimit(key)
	if e != nil {
		apierr.Write(w, r, e)
		return
	}
	want := blob.ContentType(key)
	if got, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); !strings.EqualFold(got, want) {
		apierr.Write(w, r, apierr.Invalid("Content-Type", fmt.Sprintf("send the header Content-Type: %s (from upload_headers); got %q", want, r.Header.Get("Content-Type"))).
			With("expected", want))
		return
	}
	if r.ContentLength > limit {
		apierr.Write(w, r, uploadTooLarge(limit))
		return
	}
	sn := &sniffReader{r: http.MaxBytesReader(w, r.Body, limit), want: want}
	size, err := a.cfg.Blobs.Put(r.Context(), key, sn)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		apierr.Write(w, r, uploadTooLarge(limit))
	case errors.Is(err, errWrongContent):
		apierr.Write(w, r, apierr.Invalid("body", fmt.Sprintf("the bytes are %s, not the declared %s", sn.got, want)).
			With("declared", want).With("detected", sn.got))
	case r.Context().Err() != nil:
		a.log.Info("upload abandoned", "request_id", apierr.RequestID(r.Context()), "key", key)
	case err != nil:
		a.log.Error("store upload", "request_id", apierr.RequestID(r.Context()), "key", key, "err", err)
		apierr.Write(w, r, apierr.Internal())
	default:
		a.log.Info("upload stored", "request_id", apierr.RequestID(r.Context()), "key", key, "bytes", size)
		apierr.WriteJSON(w, http.StatusOK, struct {
			Object      string `json:"object"`
			SizeBytes   int64  `json:"size_bytes"`
			ContentType string `json:"content_type"`
		}{"upload_receipt", size, want})
	}
}

// putLimit is the most bytes a PUT to key may carry: MaxUploadBytes for an
// upload, the declared size for a pending asset. Other keys take no PUT.
func (a *API) putLimit(key string) (int64, *apierr.Error) {
	if blob.ValidateKey(key) != nil {
		return 0, apierr.NotFound("upload")
	}
	switch parts := strings.Split(key, "/"); {
	case len(parts) == 2 && parts[0] == "uploads":
		return MaxUploadBytes, nil
	case len(parts) == 2 && parts[0] == "assets":
		id := strings.TrimSuffix(parts[1], path.Ext(parts[1]))
		as, ok := a.fsm.Asset("", id)
		if !ok || as.BlobKey != key {
			return 0, apierr.NotFound("asset")
		}
		if as.Status != "pending" {
			return 0, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest,
				"this asset is complete; its bytes cannot change (create a new asset)").With("asset_id", id)
		}
		return as.Size, nil
	}
	return 0, apierr.NotFound("upload")
}

func uploadTooLarge(limit int64) *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
		fmt.Sprintf("the file must be at most %d bytes", limit)).With("max_bytes", limit)
}

// errWrongContent ends a PUT whose bytes are not of the declared type.
var errWrongContent = errors.New("content does not match the declared type")

// sniffReader passes a body through and, once it has seen the first 512 bytes
// (or the end), refuses to go on when they are not of the type want. The
// refusal is a read error, so the blob store keeps nothing.
type sniffReader struct {
	r    io.Reader
	want string
	head bytes.Buffer
	got  string
	done bool
}

func (s *sniffReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if s.done {
		return n, err
	}
	s.head.Write(p[:min(n, 512-s.head.Len())])
	if s.head.Len() < 512 && err == nil {
		return n, nil
	}
	s.done = true
	if s.got = sniff(s.head.Bytes()); s.got != s.want {
		return 0, errWrongContent
	}
	return n, err
}

// sniff is the media type of a file by its first bytes (the WHATWG algorithm
// of http.DetectContentType), without parameters.
func sniff(head []byte) string {
	t, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	return t
}
