package store

// The statements whose plans a test checks for index use.
const (
	DeleteFinalDeliveriesSQL = deleteFinalDeliveries
	DeletePublishedOutboxSQL = deletePublishedOutbox
	ExportOutboxSQL          = exportOutboxQuery
	ExportDeliveriesSQL      = exportDeliveriesQuery
	DeleteEventsSQL          = deleteEvents
	AnonymiseSwipesSQL       = anonymiseSwipes
	FailedDeliveriesSQL      = failedDeliveries
	ReplayFailedSQL          = replayFailedDeliveries
	WebhookBacklogSQL        = webhookBacklog
)

// StoredModelSQL reads a learned state's model in either form.
const StoredModelSQL = storedModel
