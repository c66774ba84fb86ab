package models

// The catalog data. Each spec is turned into a Model by build (catalog.go);
// catalog_test.go checks every entry for consistency.
//
// Credits are whole credits per second of output. Tiers list a model's
// resolutions lowest first with, for each, its price, the memory needed on
// each GPU and the reference-H100 GPU-seconds per output second (summed over
// the model's GPUs).

// Aspect-ratio sets shared by several models (build copies them).
var (
	arWide   = []string{"16:9", "9:16"}
	arSquare = []string{"16:9", "9:16", "1:1"}
	arFour   = []string{"16:9", "9:16", "1:1", "4:3", "3:4"}
	arAll    = []string{"16:9", "9:16", "1:1", "4:3", "3:4", "21:9"}
)

var (
	textImage     = []Operation{TextToVideo, ImageToVideo}
	textImageEnds = []Operation{TextToVideo, ImageToVideo, FirstLastFrame}
	allOps        = []Operation{TextToVideo, ImageToVideo, FirstLastFrame, MultipleImages}
)

var specs = []spec{
	// --- Kling (Kuaishou) ---------------------------------------------
	{
		id: "kling-1.6-standard", name: "Kling 1.6 Standard", provider: "Kuaishou", family: "kling",
		description: "Fast, inexpensive 720p model with multi-image elements for keeping subjects consistent.",
		ops:         []Operation{TextToVideo, ImageToVideo, MultipleImages},
		tiers:       []tier{{"720p", 5, 40, 24}},
		durations:   []int{5, 10}, aspects: arSquare,
		defRes: "720p", defDur: 5, defAR: "16:9", maxImages: 4, gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamCfgScale},
	},
	{
		id: "kling-2.1-pro", name: "Kling 2.1 Pro", provider: "Kuaishou", family: "kling",
		description: "1080p image-to-video with optional end frame; strong motion and prompt adherence.",
		ops:         []Operation{ImageToVideo, FirstLastFrame},
		tiers:       []tier{{"1080p", 10, 70, 60}},
		durations:   []int{5, 10}, aspects: arSquare,
		defRes: "1080p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamCfgScale},
	},
	{
		id: "kling-2.1-master", name: "Kling 2.1 Master", provider: "Kuaishou", family: "kling",
		description: "Kling's flagship 2.1 model: cinematic motion, complex camera moves and fine detail.",
		ops:         textImage,
		tiers:       []tier{{"720p", 20, 64, 120}, {"1080p", 28, 76, 220}},
		durations:   []int{5, 10}, aspects: arSquare,
		defRes: "1080p", defDur: 5, defAR: "16:9", gpuCount: 2,
		params: []string{ParamNegativePrompt, ParamCfgScale},
	},
	{
		id: "kling-2.5-turbo-pro", name: "Kling 2.5 Turbo Pro", provider: "Kuaishou", family: "kling",
		description: "Faster, cheaper Kling 2.5 with better physics, start and end frame control.",
		ops:         textImageEnds,
		tiers:       []tier{{"720p", 5, 48, 30}, {"1080p", 7, 64, 60}},
		durations:   []int{5, 10}, aspects: arSquare,
		defRes: "1080p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamCfgScale},
	},
	{
		id: "kling-2.6-pro", name: "Kling 2.6 Pro", provider: "Kuaishou", family: "kling",
		description: "Kling 2.6 with native audio: dialogue, sound effects and ambience in one pass.",
		ops:         textImage,
		tiers:       []tier{{"1080p", 14, 72, 140}},
		durations:   []int{5, 10}, aspects: arSquare,
		defRes: "1080p", defDur: 5, defAR: "16:9", gpuCount: 2,
		params: []string{ParamNegativePrompt, ParamGenerateAudio, ParamCfgScale},
	},

	// --- Vidu (ShengShu) ----------------------------------------------
	{
		id: "vidu-2.0", name: "Vidu 2.0", provider: "ShengShu", family: "vidu",
		description: "Quick image-driven generation: image-to-video, start/end frames and up to 3 references.",
		ops:         []Operation{ImageToVideo, FirstLastFrame, MultipleImages},
		tiers:       []tier{{"720p", 4, 36, 20}, {"1080p", 10, 56, 45}},
		durations:   []int{4, 8}, aspects: arSquare,
		defRes: "720p", defDur: 4, defAR: "16:9", maxImages: 3, gpuCount: 1,
		params: []string{ParamSeed, ParamMovementAmplitude},
	},
	{
		id: "vidu-q1", name: "Vidu Q1", provider: "ShengShu", family: "vidu",
		description: "1080p model with anime style, start/end frames and up to 7 reference images.",
		ops:         allOps,
		tiers:       []tier{{"1080p", 8, 64, 70}},
		durations:   []int{5}, aspects: arSquare, styles: []string{"general", "anime"},
		defRes: "1080p", defDur: 5, defAR: "16:9", maxImages: 7, gpuCount: 1,
		params: []string{ParamSeed, ParamStyle, ParamMovementAmplitude},
	},
	{
		id: "vidu-q2-pro", name: "Vidu Q2 Pro", provider: "ShengShu", family: "vidu",
		description: "Vidu Q2 with richer facial expression and camera language, 540p to 1080p.",
		ops:         allOps,
		tiers:       []tier{{"540p", 4, 40, 30}, {"720p", 7, 52, 50}, {"1080p", 12, 72, 100}},
		durations:   []int{4, 5, 8}, aspects: arSquare,
		defRes: "720p", defDur: 5, defAR: "16:9", maxImages: 7, gpuCount: 1,
		params: []string{ParamSeed, ParamMovementAmplitude},
	},

	// --- Veo (Google DeepMind) ----------------------------------------
	{
		id: "veo-2", name: "Veo 2", provider: "Google DeepMind", family: "veo",
		description: "High-fidelity 720p video with realistic physics and a strong grasp of cinematography.",
		ops:         textImage,
		tiers:       []tier{{"720p", 50, 72, 200}},
		durations:   []int{5, 6, 7, 8}, aspects: arWide,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 2,
		params: []string{ParamNegativePrompt, ParamSeed, ParamAutoFix},
	},
	{
		id: "veo-3", name: "Veo 3", provider: "Google DeepMind", family: "veo",
		description: "Veo 3 renders video with native audio: speech, effects and music, up to 1080p.",
		ops:         textImage,
		tiers:       []tier{{"720p", 40, 70, 260}, {"1080p", 48, 78, 420}},
		durations:   []int{4, 6, 8}, aspects: arWide,
		defRes: "720p", defDur: 8, defAR: "16:9", gpuCount: 4,
		params: []string{ParamNegativePrompt, ParamSeed, ParamGenerateAudio, ParamAutoFix},
	},
	{
		id: "veo-3.1", name: "Veo 3.1", provider: "Google DeepMind", family: "veo",
		description: "Veo 3.1 adds start/end frames and up to 3 reference images to Veo 3's audio-visual renders.",
		ops:         allOps,
		tiers:       []tier{{"720p", 40, 72, 280}, {"1080p", 48, 80, 450}},
		durations:   []int{4, 6, 8}, aspects: arWide,
		defRes: "720p", defDur: 8, defAR: "16:9", maxImages: 3, gpuCount: 4,
		params: []string{ParamNegativePrompt, ParamSeed, ParamGenerateAudio, ParamAutoFix},
	},

	// --- Wan (Alibaba) ------------------------------------------------
	{
		id: "wan-2.1-14b", name: "Wan 2.1 14B", provider: "Alibaba", family: "wan",
		description: "Open-weights 14B model for text, image and first/last-frame video at 480p and 720p.",
		ops:         textImageEnds,
		tiers:       []tier{{"480p", 3, 32, 36}, {"720p", 6, 56, 96}},
		durations:   []int{5}, aspects: arFour,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed, ParamAutoFix},
	},
	{
		id: "wan-2.2-a14b", name: "Wan 2.2 A14B", provider: "Alibaba", family: "wan",
		description: "Open-weights mixture-of-experts model with finer lighting, colour and camera control.",
		ops:         textImage,
		tiers:       []tier{{"480p", 4, 44, 40}, {"720p", 8, 72, 110}},
		durations:   []int{5}, aspects: arSquare,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed, ParamAutoFix},
	},
	{
		id: "wan-2.5-preview", name: "Wan 2.5 Preview", provider: "Alibaba", family: "wan",
		description: "Wan 2.5 renders up to 1080p with synchronised audio and lip-sync.",
		ops:         textImage,
		tiers:       []tier{{"480p", 5, 48, 60}, {"720p", 10, 64, 140}, {"1080p", 15, 76, 300}},
		durations:   []int{5, 10}, aspects: arSquare,
		defRes: "1080p", defDur: 5, defAR: "16:9", gpuCount: 2,
		params: []string{ParamNegativePrompt, ParamSeed, ParamGenerateAudio, ParamAutoFix},
	},

	// --- Hailuo (MiniMax) ---------------------------------------------
	{
		id: "hailuo-02", name: "Hailuo 02", provider: "MiniMax", family: "hailuo",
		description: "MiniMax Hailuo 02: precise instruction following and extreme physics, 720p and 1080p.",
		ops:         textImageEnds,
		tiers:       []tier{{"720p", 5, 60, 120}, {"1080p", 8, 76, 260}},
		durations:   []int{6, 10}, aspects: arSquare,
		defRes: "720p", defDur: 6, defAR: "16:9", gpuCount: 2,
		params: []string{ParamAutoFix},
	},

	// --- Seedance (ByteDance) -----------------------------------------
	{
		id: "seedance-1.0-lite", name: "Seedance 1.0 Lite", provider: "ByteDance", family: "seedance",
		description: "Cost-efficient Seedance with start/end frames and up to 4 reference images.",
		ops:         allOps,
		tiers:       []tier{{"480p", 2, 24, 12}, {"720p", 4, 36, 28}, {"1080p", 9, 56, 64}},
		durations:   []int{5, 10}, aspects: arAll,
		defRes: "720p", defDur: 5, defAR: "16:9", maxImages: 4, gpuCount: 1,
		params: []string{ParamSeed, ParamCameraFixed},
	},
	{
		id: "seedance-1.0-pro", name: "Seedance 1.0 Pro", provider: "ByteDance", family: "seedance",
		description: "Multi-shot storytelling with smooth, stable motion up to 1080p.",
		ops:         textImage,
		tiers:       []tier{{"480p", 3, 36, 24}, {"720p", 6, 52, 56}, {"1080p", 12, 72, 130}},
		durations:   []int{5, 10}, aspects: arAll,
		defRes: "1080p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamSeed, ParamCameraFixed},
	},
	{
		id: "seedance-1.5-pro", name: "Seedance 1.5 Pro", provider: "ByteDance", family: "seedance",
		description: "Seedance 1.5 generates audio and video jointly, with lip-synced dialogue.",
		ops:         textImageEnds,
		tiers:       []tier{{"480p", 4, 44, 50}, {"720p", 8, 60, 110}, {"1080p", 16, 78, 240}},
		durations:   []int{4, 5, 8, 10, 12}, aspects: arAll,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 2,
		params: []string{ParamSeed, ParamGenerateAudio, ParamCameraFixed},
	},

	// --- Runway ---------------------------------------------------------
	{
		id: "runway-gen3-alpha-turbo", name: "Runway Gen-3 Alpha Turbo", provider: "Runway", family: "runway",
		description: "Fast image-to-video from a single keyframe.",
		ops:         []Operation{ImageToVideo},
		tiers:       []tier{{"720p", 5, 40, 30}},
		durations:   []int{5, 10}, aspects: arWide,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamSeed},
	},
	{
		id: "runway-gen4-turbo", name: "Runway Gen-4 Turbo", provider: "Runway", family: "runway",
		description: "Gen-4 image-to-video with consistent characters and scenes, every common aspect ratio.",
		ops:         []Operation{ImageToVideo},
		tiers:       []tier{{"720p", 5, 48, 36}},
		durations:   []int{5, 10}, aspects: arAll,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamSeed},
	},

	// --- Luma Ray (Luma AI) -------------------------------------------
	{
		id: "luma-ray-2", name: "Luma Ray 2", provider: "Luma AI", family: "luma",
		description: "Large model with coherent, natural motion; keyframes and up to 4k output.",
		ops:         textImageEnds,
		tiers:       []tier{{"540p", 8, 48, 80}, {"720p", 16, 60, 140}, {"1080p", 36, 72, 300}, {"4k", 72, 80, 400}},
		durations:   []int{5, 9}, aspects: arAll,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 2,
	},
	{
		id: "luma-ray-2-flash", name: "Luma Ray 2 Flash", provider: "Luma AI", family: "luma",
		description: "Distilled Ray 2: about three times faster and cheaper, for drafts and iteration.",
		ops:         textImageEnds,
		tiers:       []tier{{"540p", 3, 24, 20}, {"720p", 6, 32, 36}, {"1080p", 12, 48, 80}},
		durations:   []int{5, 9}, aspects: arAll,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
	},

	// --- PixVerse -------------------------------------------------------
	{
		id: "pixverse-v4.5", name: "PixVerse V4.5", provider: "PixVerse", family: "pixverse",
		description: "Stylised short clips with transitions and multi-subject fusion of up to 3 images.",
		ops:         allOps,
		tiers:       []tier{{"540p", 5, 28, 18}, {"720p", 6, 36, 30}, {"1080p", 12, 52, 70}},
		durations:   []int{5, 8}, aspects: arFour,
		styles: []string{"anime", "3d_animation", "clay", "comic", "cyberpunk"},
		defRes: "720p", defDur: 5, defAR: "16:9", maxImages: 3, gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed, ParamStyle},
	},
	{
		id: "pixverse-v5", name: "PixVerse V5", provider: "PixVerse", family: "pixverse",
		description: "PixVerse V5: sharper detail, smoother motion and optional sound effects.",
		ops:         allOps,
		tiers:       []tier{{"540p", 5, 32, 22}, {"720p", 7, 40, 36}, {"1080p", 14, 60, 84}},
		durations:   []int{5, 8}, aspects: arFour,
		styles: []string{"anime", "3d_animation", "clay", "comic", "cyberpunk"},
		defRes: "720p", defDur: 5, defAR: "16:9", maxImages: 3, gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed, ParamGenerateAudio, ParamStyle},
	},

	// --- LTX (Lightricks) ---------------------------------------------
	{
		id: "ltx-video-13b", name: "LTX-Video 13B", provider: "Lightricks", family: "ltx",
		description: "Open-weights model that renders faster than real time; keyframe conditioning.",
		ops:         textImageEnds,
		tiers:       []tier{{"480p", 1, 18, 4}, {"720p", 2, 26, 9}},
		durations:   []int{5, 8, 10}, aspects: arSquare,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed},
	},
	{
		id: "ltx-2-pro", name: "LTX-2 Pro", provider: "Lightricks", family: "ltx",
		description: "LTX-2 renders native 1080p or 4k with synchronised audio.",
		ops:         textImage,
		tiers:       []tier{{"1080p", 6, 48, 30}, {"4k", 24, 76, 140}},
		durations:   []int{6, 8, 10}, aspects: arWide,
		defRes: "1080p", defDur: 6, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed, ParamGenerateAudio},
	},

	// --- HunyuanVideo (Tencent) ---------------------------------------
	{
		id: "hunyuan-video", name: "HunyuanVideo", provider: "Tencent", family: "hunyuan",
		description: "Open-weights 13B text-to-video model with high visual quality and motion diversity.",
		ops:         []Operation{TextToVideo},
		tiers:       []tier{{"540p", 4, 45, 60}, {"720p", 8, 60, 120}},
		durations:   []int{5}, aspects: arFour,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed, ParamAutoFix},
	},
	{
		id: "hunyuan-video-1.5", name: "HunyuanVideo 1.5", provider: "Tencent", family: "hunyuan",
		description: "Lightweight 8.3B open model for text and image to video, with 1080p super-resolution.",
		ops:         textImage,
		tiers:       []tier{{"480p", 2, 20, 16}, {"720p", 4, 30, 40}, {"1080p", 7, 44, 96}},
		durations:   []int{5, 10}, aspects: arFour,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed, ParamAutoFix},
	},

	// --- Mochi (Genmo) --------------------------------------------------
	{
		id: "mochi-1", name: "Mochi 1", provider: "Genmo", family: "mochi",
		description: "Open-weights 10B text-to-video model with strong prompt adherence, 480p.",
		ops:         []Operation{TextToVideo},
		tiers:       []tier{{"480p", 3, 42, 60}},
		durations:   []int{5}, aspects: []string{"16:9"},
		defRes: "480p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed},
	},

	// --- CogVideoX (Zhipu AI) -----------------------------------------
	{
		id: "cogvideox-1.5-5b", name: "CogVideoX 1.5 5B", provider: "Zhipu AI", family: "cogvideox",
		description: "Open-weights 5B model for text and image to video, 5 or 10 seconds.",
		ops:         textImage,
		tiers:       []tier{{"480p", 2, 18, 20}, {"720p", 4, 26, 48}},
		durations:   []int{5, 10}, aspects: arSquare,
		defRes: "720p", defDur: 5, defAR: "16:9", gpuCount: 1,
		params: []string{ParamNegativePrompt, ParamSeed},
	},

	// --- Sora (OpenAI) --------------------------------------------------
	{
		id: "sora-2", name: "Sora 2", provider: "OpenAI", family: "sora",
		description: "Physically accurate video with synchronised dialogue and sound, always rendered with audio.",
		ops:         textImage,
		tiers:       []tier{{"720p", 10, 76, 240}},
		durations:   []int{4, 8, 12}, aspects: arWide,
		defRes: "720p", defDur: 4, defAR: "16:9", gpuCount: 4,
	},
	{
		id: "sora-2-pro", name: "Sora 2 Pro", provider: "OpenAI", family: "sora",
		description: "Higher-fidelity Sora 2 for production footage, up to 1080p.",
		ops:         textImage,
		tiers:       []tier{{"720p", 30, 78, 360}, {"1080p", 50, 80, 600}},
		durations:   []int{4, 8, 12}, aspects: arWide,
		defRes: "720p", defDur: 4, defAR: "16:9", gpuCount: 4,
	},
}
