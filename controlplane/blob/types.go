package blob

import (
	"path"
	"strings"
)

// contentTypes are the media types of the files vidfarm serves, by extension.
var contentTypes = map[string]string{
	".mp4":  "video/mp4",
	".vtt":  "text/vtt; charset=utf-8",
	".srt":  "application/x-subrip",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".png":  "image/png",
	".webp": "image/webp",
	".gif":  "image/gif",
	".json": "application/json",
	".wav":  "audio/wav",
	".m4a":  "audio/mp4",
	".txt":  "text/plain; charset=utf-8",
}

// ContentType is the media type of the blob at key, by its extension;
// application/octet-stream when the extension is not one vidfarm writes.
func ContentType(key string) string {
	if t, ok := contentTypes[strings.ToLower(path.Ext(key))]; ok {
		return t
	}
	return "application/octet-stream"
}
