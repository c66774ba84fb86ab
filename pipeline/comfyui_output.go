package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// comfyFile is an output file as the history lists it.
type comfyFile struct {
	Filename  string `json:"filename"`
	Subfolder string `json:"subfolder"`
	Type      string `json:"type"` // output, temp
}

// fetchOutput downloads the video of a finished prompt (see pickOutput)
// to dst and checks that it is one.
func (r *ComfyUIRunner) fetchOutput(ctx context.Context, h comfyHistory, dst string) error {
	f, err := pickOutput(h, r.OutputNode)
	if err != nil {
		return err
	}
	resp, err := r.do(ctx, http.MethodGet, viewRoute(f), "", nil)
	if err != nil {
		return fmt.Errorf("download %s: %w", f.Filename, err)
	}
	defer resp.Body.Close()
	maxBytes := r.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultHTTPRunnerMaxBytes
	}
	if err := writeClip(dst, resp.Body, -1, maxBytes); err != nil {
		return fmt.Errorf("download %s: %w", f.Filename, err)
	}
	if err := checkOutput(dst); err != nil {
		return err
	}
	tools := r.Tools
	if tools == nil {
		tools = &Tools{}
	}
	info, err := tools.Probe(ctx, dst)
	switch {
	case errors.Is(err, ErrToolMissing) || ctx.Err() != nil:
		return err
	case err != nil:
		return fmt.Errorf("%w: the output %s is not a video ffprobe can read: %w", ErrRunnerFailed, f.Filename, err)
	case info.VideoCodec == "":
		return fmt.Errorf("%w: the output %s has no video stream", ErrRunnerFailed, f.Filename)
	}
	return nil
}

// pickOutput chooses the clip among the history's outputs: a file with a
// video extension listed under "gifs" (VideoHelperSuite's
// VHS_VideoCombine), "videos", or "images" (core SaveVideo and SaveWEBM
// list theirs there with "animated": [true]). The node is outputNode when
// set, else the only node that gave a video; of a node's videos, the last.
func pickOutput(h comfyHistory, outputNode string) (comfyFile, error) {
	videos := map[string][]comfyFile{}
	var summary []string
	for _, node := range sortedKeys(h.Outputs) {
		for _, key := range sortedKeys(h.Outputs[node]) {
			var files []comfyFile
			if json.Unmarshal(h.Outputs[node][key], &files) != nil {
				continue // "animated", "text" and other non-file lists
			}
			for _, f := range files {
				if f.Filename == "" {
					continue
				}
				summary = append(summary, fmt.Sprintf("node %q %s %s", node, key, f.Filename))
				if key != "images" && key != "gifs" && key != "videos" || !isComfyVideo(f) {
					continue
				}
				videos[node] = append(videos[node], f)
			}
		}
	}
	gave := "no files"
	if len(summary) > 0 {
		gave = fmt.Sprint(summary)
	}
	if outputNode != "" {
		if fs := videos[outputNode]; len(fs) > 0 {
			return fs[len(fs)-1], nil
		}
		return comfyFile{}, fmt.Errorf("%w: output node %q gave no video file (the prompt gave %s)", ErrNoOutput, outputNode, gave)
	}
	nodes := sortedKeys(videos)
	switch len(nodes) {
	case 0:
		return comfyFile{}, fmt.Errorf("%w: the workflow gave no video file (it gave %s); save the clip with SaveVideo or VHS_VideoCombine", ErrNoOutput, gave)
	case 1:
		fs := videos[nodes[0]]
		return fs[len(fs)-1], nil
	}
	return comfyFile{}, fmt.Errorf("%w: nodes %q all gave videos; set output_node to the one that is the clip", ErrRunnerFailed, nodes)
}

// viewRoute is GET /view for an output file (server.py view_image).
func viewRoute(f comfyFile) string {
	q := url.Values{"filename": {f.Filename}, "subfolder": {f.Subfolder}, "type": {f.Type}}
	return "/view?" + q.Encode()
}

// comfyVideoExts are the extensions of the files taken as video outputs.
var comfyVideoExts = map[string]bool{".mp4": true, ".webm": true, ".mov": true, ".mkv": true, ".m4v": true, ".avi": true, ".gif": true}

func isComfyVideo(f comfyFile) bool {
	return comfyVideoExts[strings.ToLower(path.Ext(f.Filename))]
}
