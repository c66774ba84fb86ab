package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config says where an S3-compatible bucket is and how to reach it.
type S3Config struct {
	// Endpoint is host[:port] (no scheme), e.g. s3.eu-west-1.amazonaws.com or
	// minio.internal:9000.
	Endpoint  string
	Bucket    string
	Region    string
	AccessKey string
	SecretKey string
	// Insecure talks plain http: for a store on a private network or in tests.
	Insecure bool
	// Prefix is put before every key, so several farms can share a bucket.
	Prefix string
}

// S3Store keeps blobs in an S3-compatible bucket through minio-go. It is the
// store of a control plane with several nodes: whichever node leads serves the
// same files. A PUT is atomic in S3, so readers see the old blob or the new one;
// a failed multipart upload is aborted and leaves what was there.
type S3Store struct {
	c      *minio.Client
	bucket string
	prefix string
}

var _ Store = (*S3Store)(nil)

// partSize is the multipart chunk for uploads of unknown length; minio-go holds
// one part in memory per upload.
const partSize = 16 << 20

// NewS3Store connects to the bucket and checks that it exists.
func NewS3Store(ctx context.Context, cfg S3Config) (*S3Store, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("s3 blob store: an endpoint and a bucket are required")
	}
	if strings.Contains(cfg.Endpoint, "://") {
		return nil, fmt.Errorf("s3 blob store: endpoint %q must be host[:port] without a scheme (use the insecure switch for http)", cfg.Endpoint)
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: !cfg.Insecure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 blob store: %w", err)
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("s3 blob store: reach bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("s3 blob store: bucket %s does not exist at %s; create it first", cfg.Bucket, cfg.Endpoint)
	}
	return &S3Store{c: c, bucket: cfg.Bucket, prefix: strings.Trim(cfg.Prefix, "/")}, nil
}

func (s *S3Store) object(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// Put implements Store.
func (s *S3Store) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	obj, err := s.object(key)
	if err != nil {
		return 0, err
	}
	// UNSIGNED-PAYLOAD instead of the streaming chunk signature: TLS covers the
	// bytes in transit, and not every S3-compatible server decodes aws-chunked
	// bodies (some store the chunk framing as the object).
	info, err := s.c.PutObject(ctx, s.bucket, obj, ctxReader{ctx: ctx, r: r}, -1,
		minio.PutObjectOptions{ContentType: ContentType(key), PartSize: partSize, DisableContentSha256: true})
	if err != nil {
		return 0, fmt.Errorf("put %s: %w", key, err)
	}
	return info.Size, nil
}

// Open implements Store. The object reads lazily with ranged GETs, so Seek
// followed by Read serves HTTP range requests without fetching the whole blob.
func (s *S3Store) Open(ctx context.Context, key string) (io.ReadSeekCloser, Info, error) {
	obj, err := s.object(key)
	if err != nil {
		return nil, Info{}, err
	}
	o, err := s.c.GetObject(ctx, s.bucket, obj, minio.GetObjectOptions{})
	if err != nil {
		return nil, Info{}, s3Error("open", key, err)
	}
	st, err := o.Stat()
	if err != nil {
		o.Close()
		return nil, Info{}, s3Error("open", key, err)
	}
	return o, Info{Key: key, Size: st.Size, ModTime: st.LastModified}, nil
}

// Stat implements Store.
func (s *S3Store) Stat(ctx context.Context, key string) (Info, error) {
	obj, err := s.object(key)
	if err != nil {
		return Info{}, err
	}
	st, err := s.c.StatObject(ctx, s.bucket, obj, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s3Error("stat", key, err)
	}
	return Info{Key: key, Size: st.Size, ModTime: st.LastModified}, nil
}

// Delete implements Store.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, obj, minio.RemoveObjectOptions{}); err != nil {
		if e := s3Error("delete", key, err); errors.Is(e, ErrNotFound) {
			return nil
		}
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List implements Store with ListObjectsV2.
func (s *S3Store) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // ends minio's listing goroutine when the consumer stops
		full := prefix
		if s.prefix != "" {
			full = s.prefix + "/" + prefix
		}
		for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: full, Recursive: true}) {
			if o.Err != nil {
				yield(Info{}, fmt.Errorf("list %q: %w", prefix, o.Err))
				return
			}
			key := o.Key
			if s.prefix != "" {
				key = strings.TrimPrefix(key, s.prefix+"/")
			}
			if !yield(Info{Key: key, Size: o.Size, ModTime: o.LastModified}, nil) {
				return
			}
		}
	}
}

// s3Error maps S3's "no such key" to ErrNotFound.
func s3Error(op, key string, err error) error {
	resp := minio.ToErrorResponse(err)
	if resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}
