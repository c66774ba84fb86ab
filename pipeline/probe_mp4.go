package pipeline

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"time"
)

// Reading an MP4's header in process. Starting ffprobe costs a quarter of
// a second of wall time on a busy machine (mostly loading its libraries),
// more than everything else the agent does for a task; the clips model
// servers return are nearly always MP4 (or QuickTime) with the moov box
// whole, which says what CheckClip needs: the length, the video's codec and
// coded size, whether there is sound. The boxes are those of ISO/IEC
// 14496-12 (ISO base media file format): moov > mvhd (timescale,
// duration); trak > mdia > hdlr (handler "vide", "soun") and
// mdia > minf > stbl > stsd (the sample entry: its type is the codec, a
// visual entry holds width and height at bytes 32-35). Anything else (a
// fragmented file, another container, a box that does not add up) is left
// to ffprobe.

// maxMoov bounds the moov box read into memory (an hour of video has a
// few MB of sample tables).
const maxMoov = 64 << 20

var errNotMP4 = errors.New("not an MP4 this reader knows")

// mp4Codecs maps sample entry types to ffprobe's codec names.
var mp4Codecs = map[string]string{"avc1": "h264", "avc3": "h264", "hvc1": "hevc", "hev1": "hevc", "vp09": "vp9",
	"av01": "av1", "mp4v": "mpeg4"}

// probeClip is what a runner's clip is: probeMP4, or ffprobe (Probe) for a
// file it does not know. PixFmt and AudioCodec are set only by ffprobe.
func (t *Tools) probeClip(ctx context.Context, path string) (MediaInfo, error) {
	if info, err := probeMP4(path); err == nil {
		return info, nil
	}
	return t.Probe(ctx, path)
}

// probeMP4 reads path's duration, video codec and size and whether it has
// sound from its moov box. PixFmt and AudioCodec are not read.
func probeMP4(path string) (MediaInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return MediaInfo{}, err
	}
	defer f.Close()
	var hdr [16]byte
	for off := int64(0); ; {
		if _, err := f.ReadAt(hdr[:8], off); err != nil {
			return MediaInfo{}, errNotMP4
		}
		size, typ, head := int64(binary.BigEndian.Uint32(hdr[:4])), string(hdr[4:8]), int64(8)
		if size == 1 {
			if _, err := f.ReadAt(hdr[8:16], off+8); err != nil {
				return MediaInfo{}, errNotMP4
			}
			size, head = int64(binary.BigEndian.Uint64(hdr[8:16])), 16
		}
		if size < head || (off == 0 && typ != "ftyp") {
			return MediaInfo{}, errNotMP4
		}
		if typ == "moov" {
			if size > maxMoov {
				return MediaInfo{}, errNotMP4
			}
			moov := make([]byte, size-head)
			if _, err := f.ReadAt(moov, off+head); err != nil { // a cut file
				return MediaInfo{}, errNotMP4
			}
			return parseMoov(moov)
		}
		off += size
	}
}

// boxes calls fn with each box's type and body in b; false on a box that
// does not fit.
func boxes(b []byte, fn func(typ string, body []byte)) bool {
	for len(b) > 0 {
		if len(b) < 8 {
			return false
		}
		size, head := uint64(binary.BigEndian.Uint32(b)), uint64(8)
		if size == 1 && len(b) >= 16 {
			size, head = binary.BigEndian.Uint64(b[8:]), 16
		}
		if size < head || size > uint64(len(b)) {
			return false
		}
		fn(string(b[4:8]), b[head:size])
		b = b[size:]
	}
	return true
}

func parseMoov(moov []byte) (MediaInfo, error) {
	var info MediaInfo
	ok, fragmented := boxes(moov, func(typ string, body []byte) {
		switch typ {
		case "mvhd":
			info.Duration = mvhdDuration(body)
		case "trak":
			handler, entry := trakEntry(body)
			switch {
			case handler == "vide" && info.VideoCodec == "" && len(entry) >= 36:
				info.VideoCodec = mp4Codecs[string(entry[4:8])]
				info.Width, info.Height = int(binary.BigEndian.Uint16(entry[32:])), int(binary.BigEndian.Uint16(entry[34:]))
			case handler == "soun":
				info.HasAudio = true
			}
		}
	}), false
	boxes(moov, func(typ string, _ []byte) { fragmented = fragmented || typ == "mvex" })
	if !ok || fragmented || info.Duration <= 0 || info.VideoCodec == "" || info.Width <= 0 || info.Height <= 0 {
		return MediaInfo{}, errNotMP4
	}
	return info, nil
}

// mvhdDuration is the movie's length from its mvhd box (versions 0 and 1).
func mvhdDuration(b []byte) time.Duration {
	var scale, dur uint64
	switch {
	case len(b) >= 20 && b[0] == 0:
		scale, dur = uint64(binary.BigEndian.Uint32(b[12:])), uint64(binary.BigEndian.Uint32(b[16:]))
	case len(b) >= 32 && b[0] == 1:
		scale, dur = uint64(binary.BigEndian.Uint32(b[20:])), binary.BigEndian.Uint64(b[24:])
	}
	if scale == 0 || dur == 0 || dur == 0xFFFFFFFF || dur == 1<<64-1 {
		return 0
	}
	return time.Duration(float64(dur) / float64(scale) * float64(time.Second))
}

// trakEntry is a track's handler type and its first sample entry (the
// whole entry, from its size field).
func trakEntry(trak []byte) (handler string, entry []byte) {
	find := func(b []byte, typ string) (out []byte) {
		boxes(b, func(t string, body []byte) {
			if t == typ && out == nil {
				out = body
			}
		})
		return out
	}
	mdia := find(trak, "mdia")
	if hdlr := find(mdia, "hdlr"); len(hdlr) >= 12 {
		handler = string(hdlr[8:12])
	}
	stsd := find(find(find(mdia, "minf"), "stbl"), "stsd")
	if len(stsd) < 16 {
		return handler, nil
	}
	entry = stsd[8:]
	if size := binary.BigEndian.Uint32(entry); int(size) <= len(entry) && size >= 8 {
		entry = entry[:size]
	}
	return handler, entry
}
