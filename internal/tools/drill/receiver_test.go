package drill

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/webhook"
)

// The receiver counts an event as delivered only when its post is signed
// with the endpoint's secret and its body names the webhook-id.
func TestReceiverTakesSignedEventsOnly(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	r, err := startReceiver("127.0.0.1:0", key)
	require.NoError(t, err)
	t.Cleanup(r.close)

	post := func(id string, body []byte, sign []byte) int {
		ts := time.Now().Unix()
		req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/hook", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(webhook.HeaderID, id)
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(webhook.HeaderSignature, webhook.Sign(sign, id, ts, body))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	body := func(id string) []byte {
		return []byte(`{"id":"` + id + `","event":"swipe.recorded","data":{"student_id":"x"}}`)
	}

	assert.Equal(t, http.StatusNoContent, post("msg_41_ab12", body("msg_41_ab12"), key))
	assert.Equal(t, http.StatusBadRequest, post("msg_42_ab12", body("msg_42_ab12"), bytes.Repeat([]byte{8}, 32)), "another key")
	assert.Equal(t, http.StatusBadRequest, post("msg_43_ab12", body("msg_44_ab12"), key), "the body names another id")
	assert.Equal(t, http.StatusBadRequest, post("evt_45", body("evt_45"), key), "not an outbox event's id")
	assert.True(t, r.received(41))
	for _, id := range []int64{42, 43, 44, 45} {
		assert.False(t, r.received(id), id)
	}
	posts, rejected := r.counts()
	assert.Equal(t, 4, posts)
	assert.Equal(t, 3, rejected)
}
