package api

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/vidfarm/vidfarm/controlplane/apierr"
)

// observe logs every request as one structured line and records its metrics.
func (a *API) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &apierr.StatusWriter{ResponseWriter: w}
		r, hold := withHolder(r)
		next.ServeHTTP(sw, r)
		route, status := apierr.Route(r), sw.Code()
		d := time.Since(start)
		a.metrics.observe(r.Method, route, status, d)
		// Typed attributes: the line is built only when the level logs it,
		// and no value is boxed for a level that does not.
		a.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("request_id", apierr.RequestID(r.Context())), slog.String("method", r.Method),
			slog.String("route", route), slog.Int("status", status),
			slog.Float64("duration_ms", float64(d.Microseconds())/1000),
			slog.String("account_id", hold.p.AccountID))
	})
}

// limitBody refuses a declared body over the limit before anything reads it; bodies
// without a length are cut off by readBody.
func (a *API) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isFilePut(r) { // file bytes, not JSON: putFile applies the upload limit
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength >= MaxBodyBytes {
			apierr.Write(w, r, tooLarge())
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes-1)
		next.ServeHTTP(w, r)
	})
}

func tooLarge() *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
		fmt.Sprintf("request body must be under %d bytes (256 KB)", MaxBodyBytes)).With("max_bytes", MaxBodyBytes-1)
}

// readBody reads the whole body within the limit.
func readBody(r *http.Request) ([]byte, *apierr.Error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidRequest, "could not read request body: "+err.Error())
	}
	return b, nil
}

func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	apierr.Write(w, r, apierr.New(http.StatusNotFound, apierr.CodeNotFound,
		fmt.Sprintf("no endpoint %s %s; see GET /v1 for the API", r.Method, r.URL.Path)))
}
