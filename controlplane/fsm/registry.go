package fsm

import (
	"fmt"

	"github.com/vidfarm/vidfarm/scheduler"
)

// MessageType is the first byte of every log entry. Values are part of the
// on-disk format: a number, once in a log, is never reused nor given another
// payload.
type MessageType uint8

// The command types, every one in this one list. Numbers in parentheses are
// holes:
//
//	(9–11)   retired: start_video, video_progress, complete_video, from before
//	         videos ran as tasks. Old logs hold them; never reuse them.
//	(26–27), (35–37), (42–45)
//	         reserved in blocks for webhooks, media jobs and the app bridge
//	         but never used by any release. No log holds them, yet they stay
//	         empty: see below.
//
// Numbers only grow. A binary's level (levels.go) is the highest type it
// understands, and every member records its level in the state; the leader
// proposes a type above AlwaysUnderstood (47) only when every member's level
// reaches it (raftnode.Node.Apply), so that an older member never receives
// an entry it cannot apply. A new command therefore takes the number after
// the highest: a hole below it would count as understood by older binaries,
// which do not know it. Nothing else is needed for the gate; a proposer
// should expect raftnode.ErrNotUnderstood while a cluster is mid-upgrade.
//
// To add a command, see "Adding a command" in controlplane/README.md.
const (
	CreateAccountType        MessageType = 1
	CreateKeyType            MessageType = 2
	RevokeKeyType            MessageType = 3
	GrantCreditsType         MessageType = 4
	SetPlanType              MessageType = 5
	CreateFolderType         MessageType = 6
	CreateVideoType          MessageType = 7
	RenderPreviewType        MessageType = 8
	FailVideoType            MessageType = 12
	ExpireIdempotencyType    MessageType = 13
	RegisterNodeType         MessageType = 14
	NodeHeartbeatType        MessageType = 15
	LeaseTaskType            MessageType = 16
	TaskProgressType         MessageType = 17
	CompleteTaskType         MessageType = 18
	FailTaskType             MessageType = 19
	ExpireLeasesType         MessageType = 20
	DeregisterNodeType       MessageType = 21
	CreateWebhookType        MessageType = 22
	DeleteWebhookType        MessageType = 23
	RecordDeliveryType       MessageType = 24
	PruneDeliveriesType      MessageType = 25
	CreateAssetType          MessageType = 28
	CompleteAssetType        MessageType = 29
	DeleteAssetType          MessageType = 30
	CreateBrandKitType       MessageType = 31
	DeleteBrandKitType       MessageType = 32
	CreateAvatarType         MessageType = 33
	CreateSpeechType         MessageType = 34
	AppRowsType              MessageType = 38
	SetAppExportType         MessageType = 39
	TrimExportedType         MessageType = 40
	DebitCreditsType         MessageType = 41
	SetMemberType            MessageType = 46
	RemoveMemberType         MessageType = 47
	BlobsDeletedType         MessageType = 48
	ExpireSpeechType         MessageType = 49
	ResealWebhookType        MessageType = 50
	SweepIntermediatesType   MessageType = 51
	BenchFillType            MessageType = 52
	CancelVideoType          MessageType = 53
	CordonNodeType           MessageType = 54
	DrainNodeType            MessageType = 55
	UncordonNodeType         MessageType = 56
	HandBackDrainedType      MessageType = 57
	RetryDeliveryType        MessageType = 58
	SendTestEventType        MessageType = 59
	RotateWebhookSecretType  MessageType = 60
	DisableWebhookType       MessageType = 61
	EnableWebhookType        MessageType = 62
	StartEventLogType        MessageType = 63
	TrimEventLogType         MessageType = 64
	SetNodeModelsType        MessageType = 65
	StartRoutingType         MessageType = 66
	SetNodeCapacityType      MessageType = 67
	SortableEventIDsType     MessageType = 68
	SpecsByReferenceType     MessageType = 69
	DerivedCreatedEventsType MessageType = 70
	ActiveWebhookLimitType   MessageType = 71
	GrantCreditsOnceType     MessageType = 72
	CreateAccountOnceType    MessageType = 73
	NextInLineType           MessageType = 74
	FailTaskPermanentlyType  MessageType = 75
	AbandonDisabledType      MessageType = 76
)

// entry is one command of the registry: its name (in logs and metrics), a
// fresh payload to decode into, and its apply function.
type entry struct {
	name  string
	new   func() Command
	apply func(*state, Command) (any, error)
}

// Typed is a payload that answers R: the phantom method answers(R), declared
// on each payload pointer type below, ties a command to its answer so that
// the registry (command) and the callers (Do) are checked by the compiler.
type Typed[R any] interface {
	Command
	answers(R)
}

// Nothing is the answer of a command that has none to give.
type Nothing struct{}

// command makes the entry of payload type C from its apply function, so the
// payload and the function that applies it are named once, together. R, the
// apply function's answer, must be the one the payload declares (Typed).
//
// A refusal answers nil in the log's untyped answer, whatever the apply
// function returned with the error: callers get the zero R from Do.
func command[C any, PC interface {
	*C
	Typed[R]
}, R any](name string, apply func(*state, PC) (R, error)) entry {
	return entry{
		name: name,
		new:  func() Command { return PC(new(C)) },
		apply: func(s *state, c Command) (any, error) {
			r, err := apply(s, c.(PC))
			if err != nil {
				return nil, err
			}
			return r, nil
		},
	}
}

// registry is every command this binary understands, by type byte. A type
// with no entry does not decode: a log entry this binary cannot read panics
// the apply rather than let the replicas diverge.
var registry = [256]entry{
	CreateAccountType:        command("create_account", (*state).applyCreateAccount),
	CreateKeyType:            command("create_key", (*state).applyCreateKey),
	RevokeKeyType:            command("revoke_key", (*state).applyRevokeKey),
	GrantCreditsType:         command("grant_credits", (*state).applyGrantCredits),
	SetPlanType:              command("set_plan", (*state).applySetPlan),
	CreateFolderType:         command("create_folder", (*state).applyCreateFolder),
	CreateVideoType:          command("create_video", (*state).applyCreateVideo),
	RenderPreviewType:        command("render_preview", (*state).applyRenderPreview),
	FailVideoType:            command("fail_video", (*state).applyFailVideo),
	ExpireIdempotencyType:    command("expire_idempotency", (*state).applyExpireIdempotency),
	RegisterNodeType:         command("register_node", (*state).applyRegisterNode),
	NodeHeartbeatType:        command("node_heartbeat", (*state).applyNodeHeartbeat),
	LeaseTaskType:            command("lease_task", (*state).applyLeaseTask),
	TaskProgressType:         command("task_progress", (*state).applyTaskProgress),
	CompleteTaskType:         command("complete_task", (*state).applyCompleteTask),
	FailTaskType:             command("fail_task", (*state).applyFailTask),
	ExpireLeasesType:         command("expire_leases", (*state).applyExpireLeases),
	DeregisterNodeType:       command("deregister_node", (*state).applyDeregisterNode),
	CreateWebhookType:        command("create_webhook", (*state).applyCreateWebhook),
	DeleteWebhookType:        command("delete_webhook", (*state).applyDeleteWebhook),
	RecordDeliveryType:       command("record_delivery", (*state).applyRecordDelivery),
	PruneDeliveriesType:      command("prune_deliveries", (*state).applyPruneDeliveries),
	CreateAssetType:          command("create_asset", (*state).applyCreateAsset),
	CompleteAssetType:        command("complete_asset", (*state).applyCompleteAsset),
	DeleteAssetType:          command("delete_asset", (*state).applyDeleteAsset),
	CreateBrandKitType:       command("create_brand_kit", (*state).applyCreateBrandKit),
	DeleteBrandKitType:       command("delete_brand_kit", (*state).applyDeleteBrandKit),
	CreateAvatarType:         command("create_avatar", (*state).applyCreateAvatar),
	CreateSpeechType:         command("create_speech", (*state).applyCreateSpeech),
	AppRowsType:              command("app_rows", (*state).applyAppRows),
	SetAppExportType:         command("set_app_export", (*state).applySetAppExport),
	TrimExportedType:         command("trim_exported", (*state).applyTrimExported),
	DebitCreditsType:         command("debit_credits", (*state).applyDebitCredits),
	SetMemberType:            command("set_member", (*state).applySetMember),
	RemoveMemberType:         command("remove_member", (*state).applyRemoveMember),
	BlobsDeletedType:         command("blobs_deleted", (*state).applyBlobsDeleted),
	ExpireSpeechType:         command("expire_speech", (*state).applyExpireSpeech),
	ResealWebhookType:        command("reseal_webhook", (*state).applyResealWebhook),
	SweepIntermediatesType:   command("sweep_intermediates", (*state).applySweepIntermediates),
	BenchFillType:            command("bench_fill", (*state).applyBenchFill),
	CancelVideoType:          command("cancel_video", (*state).applyCancelVideo),
	CordonNodeType:           command("cordon_node", (*state).applyCordonNode),
	DrainNodeType:            command("drain_node", (*state).applyDrainNode),
	UncordonNodeType:         command("uncordon_node", (*state).applyUncordonNode),
	HandBackDrainedType:      command("hand_back_drained", (*state).applyHandBackDrained),
	RetryDeliveryType:        command("retry_delivery", (*state).applyRetryDelivery),
	SendTestEventType:        command("send_test_event", (*state).applySendTestEvent),
	RotateWebhookSecretType:  command("rotate_webhook_secret", (*state).applyRotateWebhookSecret),
	DisableWebhookType:       command("disable_webhook", (*state).applyDisableWebhook),
	EnableWebhookType:        command("enable_webhook", (*state).applyEnableWebhook),
	StartEventLogType:        command("start_event_log", (*state).applyStartEventLog),
	TrimEventLogType:         command("trim_event_log", (*state).applyTrimEventLog),
	SetNodeModelsType:        command("set_node_models", (*state).applySetNodeModels),
	StartRoutingType:         command("start_routing", (*state).applyStartRouting),
	SetNodeCapacityType:      command("set_node_capacity", (*state).applySetNodeCapacity),
	SortableEventIDsType:     command("sortable_event_ids", (*state).applySortableEventIDs),
	SpecsByReferenceType:     command("specs_by_reference", (*state).applySpecsByReference),
	DerivedCreatedEventsType: command("derived_created_events", (*state).applyDerivedCreatedEvents),
	ActiveWebhookLimitType:   command("active_webhook_limit", (*state).applyActiveWebhookLimit),
	GrantCreditsOnceType:     command("grant_credits_once", (*state).applyGrantCreditsOnce),
	CreateAccountOnceType:    command("create_account_once", (*state).applyCreateAccountOnce),
	NextInLineType:           command("next_in_line", (*state).applyNextInLine),
	FailTaskPermanentlyType:  command("fail_task_permanently", (*state).applyFailTaskPermanently),
	AbandonDisabledType:      command("abandon_disabled_deliveries", (*state).applyAbandonDisabled),
}

// What each command answers, in type order: the R of its apply function and
// of Do. Counts are how many records the command removed or added; a bool is
// whether it found what it was to change.
func (*CreateAccount) answers(Account)                   {}
func (*CreateKey) answers(Key)                           {}
func (*RevokeKey) answers(Key)                           {}
func (*GrantCredits) answers(Account)                    {}
func (*SetPlan) answers(Account)                         {}
func (*CreateFolder) answers(Folder)                     {}
func (*CreateVideo) answers(CreateVideoResult)           {}
func (*RenderPreview) answers(CreateVideoResult)         {}
func (*FailVideo) answers(Video)                         {}
func (*ExpireIdempotency) answers(int)                   {}
func (*RegisterNode) answers(Node)                       {}
func (*NodeHeartbeat) answers(scheduler.HeartbeatResult) {}
func (*LeaseTask) answers(LeaseResult)                   {}
func (*TaskProgress) answers(Nothing)                    {}
func (*CompleteTask) answers(scheduler.Outcome)          {}
func (*FailTask) answers(scheduler.Outcome)              {}
func (*ExpireLeases) answers(scheduler.ExpireResult)     {}
func (*DeregisterNode) answers(Nothing)                  {}
func (*CreateWebhook) answers(Webhook)                   {}
func (*DeleteWebhook) answers(Webhook)                   {}
func (*RecordDelivery) answers(Delivery)                 {}
func (*PruneDeliveries) answers(int)                     {}
func (*CreateAsset) answers(Asset)                       {}
func (*CompleteAsset) answers(Asset)                     {}
func (*DeleteAsset) answers(Asset)                       {}
func (*CreateBrandKit) answers(BrandKit)                 {}
func (*DeleteBrandKit) answers(BrandKit)                 {}
func (*CreateAvatar) answers(Avatar)                     {}
func (*CreateSpeech) answers(Speech)                     {}
func (*AppRows) answers([]AppRowResult)                  {}
func (*SetAppExport) answers(Nothing)                    {}
func (*TrimExported) answers(Nothing)                    {}
func (*DebitCredits) answers(DebitResult)                {}
func (*GrantCreditsOnce) answers(GrantResult)            {}
func (*CreateAccountOnce) answers(CreateAccountResult)   {}
func (*NextInLine) answers(bool)                         {}
func (*FailTaskPermanently) answers(scheduler.Outcome)   {}
func (*AbandonDisabled) answers(int)                     {}
func (*SetMember) answers(Member)                        {}
func (*RemoveMember) answers(bool)                       {}
func (*BlobsDeleted) answers(int)                        {}
func (*ExpireSpeech) answers(int)                        {}
func (*ResealWebhook) answers(bool)                      {}
func (*SweepIntermediates) answers(int)                  {}
func (*BenchFill) answers(int)                           {}
func (*CancelVideo) answers(CancelVideoResult)           {}
func (*CordonNode) answers(Node)                         {}
func (*DrainNode) answers(Node)                          {}
func (*UncordonNode) answers(Node)                       {}
func (*HandBackDrained) answers(HandBackResult)          {}
func (*RetryDelivery) answers(Delivery)                  {}
func (*SendTestEvent) answers(Delivery)                  {}
func (*RotateWebhookSecret) answers(Webhook)             {}
func (*DisableWebhook) answers(bool)                     {}
func (*EnableWebhook) answers(Webhook)                   {}
func (*StartEventLog) answers(bool)                      {}
func (*TrimEventLog) answers(int)                        {}
func (*SetNodeModels) answers(Nothing)                   {}
func (*StartRouting) answers(bool)                       {}
func (*SetNodeCapacity) answers(Nothing)                 {}
func (*SortableEventIDs) answers(bool)                   {}
func (*SpecsByReference) answers(bool)                   {}
func (*DerivedCreatedEvents) answers(bool)               {}
func (*ActiveWebhookLimit) answers(bool)                 {}

func (t MessageType) String() string {
	if e := registry[t]; e.name != "" {
		return e.name
	}
	return fmt.Sprintf("message_type_%d", uint8(t))
}

// apply runs the command's apply function from the registry.
func (s *state) apply(cmd Command) (any, error) {
	e := registry[cmd.Type()]
	if e.apply == nil {
		panic(fmt.Sprintf("fsm: no apply function for %T (type %d)", cmd, uint8(cmd.Type())))
	}
	return e.apply(s, cmd)
}
