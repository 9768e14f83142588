package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

// The document's swipe.recorded webhook describes the bodies the workers
// send (webhook.Body), an erased student's included, and refuses what
// they never send.
func TestOpenAPIWebhookSwipeRecorded(t *testing.T) {
	doc := loadOpenAPI(t)
	item := doc.Webhooks["swipe.recorded"]
	require.NotNil(t, item, "webhooks.swipe.recorded is documented")
	require.NotNil(t, item.Post)
	schema := item.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	check := func(body []byte) error {
		var v any
		require.NoError(t, json.Unmarshal(body, &v))
		return schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.EnableFormatValidation())
	}
	created := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	student, school := uuid.NewString(), uuid.NewString()
	for name, payload := range map[string]string{
		"swipe":          `{"student_id":"` + student + `","school_id":"` + school + `","direction":"left","timestamp":"2026-05-01T13:00:00.25+01:00","swipe_id":9}`,
		"erased student": `{"student_id":"` + student + `","school_id":"` + school + `","swipe_id":9}`,
	} {
		body, err := webhook.Body(webhook.MessageID(1842, "https://a.example/h"),
			domain.WebhookEvent{Topic: tasks.TopicSwipeRecorded, Payload: []byte(payload), CreatedAt: created})
		require.NoError(t, err)
		assert.NoError(t, check(body), "%s: %s", name, body)
	}
	assert.Error(t, check([]byte(`{"id":"m","event":"swipe.recorded","data":{"student_id":"`+student+`","school_id":"`+school+
		`","direction":"up","timestamp":"2026-05-01T12:00:00.000Z"}}`)), "an unknown direction")
	assert.Error(t, check([]byte(`{"id":"m","event":"other","data":{"student_id":"`+student+`","school_id":"`+school+
		`","timestamp":"2026-05-01T12:00:00.000Z"}}`)), "another event")

	id := item.Post.Parameters.GetByInAndName("header", "webhook-id").Schema.Value
	assert.NoError(t, id.VisitJSON(webhook.MessageID(1842, "https://a.example/h")))
}
