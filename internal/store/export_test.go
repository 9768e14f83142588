package store

import (
	"context"

	"github.com/collegematch/matching/internal/domain"
)

// The statements whose plans a test checks for index use.
const (
	DeleteFinalDeliveriesSQL = deleteFinalDeliveries
	DeletePublishedOutboxSQL = deletePublishedOutbox
	ExportOutboxSQL          = exportOutboxQuery
	ExportDeliveriesSQL      = exportDeliveriesQuery
	DeleteEventsSQL          = deleteEvents
	LockEventsSQL            = lockEvents
	AnonymiseSwipesSQL       = anonymiseSwipes
	FailedDeliveriesSQL      = failedDeliveries
	ReplayFailedSQL          = replayFailedDeliveries
	WebhookBacklogSQL        = webhookBacklog
)

// WatermarkStartSQL is the sync watermark's first statement, whose plan a
// test checks for the order of its reads.
const WatermarkStartSQL = watermarkStart

// StoredModelSQL reads a learned state's model in either form.
const StoredModelSQL = storedModel

// The statements that read a student's events not yet folded in.
const (
	LearnerStateSQL  = learnerState
	LearnerEventsSQL = learnerEvents
)

// LearnerStatePaged is LearnerState with pages of page events.
func LearnerStatePaged(s *Store, ctx context.Context, id string, page int) (domain.LearnerState, error) {
	return s.learnerState(ctx, id, page)
}

// AttemptLogQuery is WebhookAttemptLog's statement for a filter.
var AttemptLogQuery = attemptLogQuery
