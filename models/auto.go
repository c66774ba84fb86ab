package models

// Auto videos render their scenes with one catalog model at one resolution. The
// control plane schedules scene tasks by this model's requirements, and agents
// render with it, so both read it from here.
const (
	AutoSceneModel = "wan-2.2-a14b"
	AutoResolution = "720p"
)
