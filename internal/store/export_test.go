package store

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
